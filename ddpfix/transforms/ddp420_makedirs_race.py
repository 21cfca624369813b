"""DDP420: a folder created on every rank after an "is it there?" check: the ranks race, and the losers
raise FileExistsError."""

from __future__ import annotations

import libcst as cst

from ..analysis.after_join import why_not_after_join
from ..analysis.spawn_parent import runs_before_spawn
from ..edits import guard, with_kwarg
from ..examples import clean, fixes
from ..rule import Context, Order, Rule
from ..syntax import code_of, is_literal, kwarg, method_name, positional, receiver

EXISTS_CHECKS = {"os.path.exists", "os.path.isdir", "os.path.lexists"}
PATH_CHECKS = {"exists", "is_dir"}
CAUGHT = {"FileExistsError", "OSError", "IOError", "Exception", "BaseException"}


class MakedirsRace(Rule):
    code = "DDP420"
    distributed_only = True
    name = "makedirs-race"
    message = (
        "folder created after an exists() check on every rank: the ranks race, and the losers raise FileExistsError"
    )
    docs = """
## What
A folder made on every rank after checking that it is missing:
`if not os.path.exists(d): os.makedirs(d)` (also `if os.path.exists(d) is False:`, `os.path.isdir`,
`os.mkdir`, and pathlib's `if not p.exists(): p.mkdir()`), or made without `exist_ok=True` and no check at all. Also a fresh
folder each run, `if os.path.isdir(d): shutil.rmtree(d)` right before `os.makedirs(d)` (with
`exist_ok=True` too): there one rank deletes what another has just made and written.

## Why
Every process runs the check before any of them creates the folder: all see it missing, all try to
create it, and every process but the first fails with `FileExistsError: [Errno 17] File exists`.
Whether it happens depends on timing, so it comes and goes from run to run.

## Example
```python
if not os.path.exists(args.output_dir):
    os.makedirs(args.output_dir)
```
becomes
```python
os.makedirs(args.output_dir, exist_ok=True)
```
When the `if` does more than create the folder, the call gets `exist_ok=True` and the `if` stays.
pathlib's `p.mkdir()` gets `exist_ok=True` the same way.

## Fix safety
Safe for `os.makedirs` and `Path.mkdir` behind the check: a plain run creates the same folder; the
only difference is a *file* at that path, which the check skipped and `exist_ok=True` reports
(`FileExistsError`). `os.mkdir(d)` on a line of its own stays as it is, inside
`with contextlib.suppress(FileExistsError):` (safe: a plain run does exactly what it did, and a rank
that loses the race goes on); written on the line of its `if` (`if not os.path.exists(d): os.mkdir(d)`),
it becomes `os.makedirs(d, exist_ok=True)`, which also creates missing parent folders where `mkdir`
raised: an unsafe fix. A creation with no check and no `exist_ok`
(`os.makedirs(d)`, on a line of its own) is made on rank 0 only, and the others wait at a barrier
until it exists: it fails on a second plain run too, which may be on purpose (refusing to reuse a
folder), and so it still does, on rank 0 (`exist_ok=True` would take that away). Where it is not a
statement of its own (or `os.mkdir`, or pathlib's `mkdir()`), or runs before the process group is
joined, it is reported without a fix: pass `exist_ok=True`, or create it on rank 0 before the other
ranks use it. The fresh folder (removed, then made again) is removed and made on rank 0 only, and the others
wait at a barrier until it exists (`if DISTRIBUTED: dist.barrier()` after it; safe: a plain run does
what it did); where it runs before the process group is joined, it is reported without a fix.
Creations under a rank-0 guard or inside `try: ... except FileExistsError:` are not reported,
nor are those a script launched with `mp.spawn` makes in the launching process before it starts the
workers (`if __name__ == "__main__":` ... `os.makedirs(d)` ... `mp.spawn(main, ...)`): one process
per machine runs them.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.index.calls:
            qual = facts.names.call_qual(call)
            if qual in ("os.makedirs", "os.mkdir"):
                path = positional(call, 0) or kwarg(call, "name") or kwarg(call, "path")
                path_code = code_of(path.value) if path is not None else None
                exist_ok = kwarg(call, "exist_ok") or (positional(call, 2) if qual == "os.makedirs" else None)
            elif method_name(call) == "mkdir" and receiver(call) is not None and _path_mkdir(call):
                path_code = code_of(receiver(call))  # type: ignore[arg-type]
                exist_ok = kwarg(call, "exist_ok") or positional(call, 2)  # Path.mkdir(mode, parents, exist_ok)
            else:
                continue
            if path_code is None or facts.ranks.rank_guarded(call) or _caught(facts, call):
                continue
            if runs_before_spawn(facts.index, facts.launch, call):
                continue  # the launching process makes it once, before it starts the workers
            check = _existence_check(facts, call, path_code)
            if check is None and qual == "os.makedirs" and self._fresh_folder(ctx, call, path_code):
                continue  # (with exist_ok=True too: a rank still deletes what another has made)
            if exist_ok is not None and not is_literal(exist_ok.value, False):
                continue
            if check is None and qual not in ("os.makedirs", "os.mkdir") and not _evidently_path(facts, call):
                continue  # `x.mkdir()` of something that may not be a pathlib path
            if check is None:
                message = (
                    f"{code_of(call.func)}() without exist_ok=True on every rank: all ranks but one raise "
                    "FileExistsError"
                )
                line = _own_line(facts, call) if qual == "os.makedirs" else None
                why = "pass exist_ok=True, or create it on rank 0 before the others use it"
                if line is None or not _unconditional(facts, line) or why_not_after_join(facts, line) is not None:
                    ctx.report(call, f"{message}; {why}", fix="none")
                elif ctx.report(call, message):  # as in a plain run, a folder already there still raises
                    _rank0_first(ctx, call, [line])  # type: ignore[list-item]
                continue
            mkdir = qual == "os.mkdir"
            line = _own_line(facts, call) if mkdir else None
            if mkdir and line is not None:  # the call keeps its exact behaviour; a rank that loses the race goes on
                if ctx.report(call):
                    suppress = f"{ctx.plan.ref('contextlib', 'contextlib', style='import')}.suppress(FileExistsError)"
                    ctx.plan.replace(line, lambda n, w=suppress: _within(n, w))
                continue
            if not ctx.report(call, fix="unsafe" if mkdir else None):
                continue
            self._fix(ctx, call, check, mkdir)

    @staticmethod
    def _fresh_folder(ctx: Context, call: cst.Call, path_code: str) -> bool:
        """`if os.path.isdir(d): shutil.rmtree(d)` right before `os.makedirs(d)`: a fresh folder each run.
        On every rank, one rank would delete what another has just made and written. Rank 0 makes it and
        the others wait at a barrier until it exists. True when this shape is reported (fixed or not)."""
        facts = ctx.facts
        line = _own_line(facts, call)
        clear = _clearing(facts, line, path_code)
        if clear is None:
            return False
        message = (
            f"folder {path_code} removed and made again on every rank: one rank deletes what another has "
            "just made and written"
        )
        why = why_not_after_join(facts, line)  # type: ignore[arg-type]
        if why is not None:
            ctx.report(call, f"{message}; {why}", fix="none")
            return True
        if ctx.report(call, message):
            _rank0_first(ctx, call, [clear, line])  # type: ignore[list-item]
        return True

    @staticmethod
    def _fix(ctx: Context, call: cst.Call, check: cst.If, mkdir: bool) -> None:
        positional_flag = positional(call, 2) if kwarg(call, "exist_ok") is None else None

        def rewrite(node: cst.Call) -> cst.Call:
            if mkdir:
                node = node.with_changes(func=cst.parse_expression(code_of(node.func)[: -len("mkdir")] + "makedirs"))
            if positional_flag is not None:  # os.makedirs(d, mode, False)
                args = [
                    a.with_changes(value=cst.Name("True")) if a.deep_equals(positional_flag) else a for a in node.args
                ]
                return node.with_changes(args=args)
            return with_kwarg(node, "exist_ok", cst.Name("True"))

        ctx.plan.replace(call, rewrite)
        if _collapsible(ctx.facts, check):
            ctx.plan.replace(check, _collapse)


def _clearing(facts, line: cst.SimpleStatementLine | None, path_code: str) -> cst.If | None:
    """The `if os.path.isdir(d): shutil.rmtree(d)` right before `line` (`os.makedirs(d)`), if any."""
    block = facts.index.parent.get(line) if line is not None else None
    body = list(getattr(block, "body", ()))
    i = next((k for k, s in enumerate(body) if s is line), None)
    clear = body[i - 1] if i else None
    if isinstance(clear, cst.If) and clear.orelse is None and _removes(facts, clear, path_code):
        return clear
    return None


def clears_a_fresh_folder(facts, call: cst.Call) -> bool:
    """Is `call` the `shutil.rmtree(d)` of a fresh folder (`if os.path.isdir(d): shutil.rmtree(d)` right
    before `os.makedirs(d)`), which this rule makes rank 0's with the folder?"""
    clear = facts.index.enclosing(call, cst.If)
    after = facts.index.next_statement(clear) if clear is not None else None
    made = (
        after.body[0].value
        if isinstance(after, cst.SimpleStatementLine) and isinstance(after.body[0], cst.Expr)
        else None
    )
    if not (isinstance(made, cst.Call) and facts.names.call_qual(made) == "os.makedirs" and made.args):
        return False
    return _clearing(facts, after, code_of(made.args[0].value)) is clear


def _removes(facts, clear: cst.If, path_code: str) -> bool:
    """`if os.path.isdir(d): shutil.rmtree(d)`: an existence test of `d` (`_checked_path`) whose body only
    removes `d`."""
    if _checked_path(facts, clear.test) != path_code:
        return False
    body = list(getattr(clear.body, "body", ()))
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
        return False
    expr = body[0].body[0]
    call = expr.value if isinstance(expr, cst.Expr) else None
    return (
        isinstance(call, cst.Call)
        and facts.names.call_qual(call) == "shutil.rmtree"
        and bool(call.args)
        and code_of(call.args[0].value) == path_code
    )


def _own_line(facts, call: cst.Call) -> cst.SimpleStatementLine | None:
    """The statement line that is the call and nothing else (not `if c: os.mkdir(d)` on one line)."""
    expr = facts.index.parent.get(call)
    line = facts.index.parent.get(expr)
    if isinstance(expr, cst.Expr) and isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1:
        return line
    return None


def _unconditional(facts, stmt: cst.CSTNode) -> bool:
    """Is `stmt` a statement of a function's body or of the module's, where every rank reaches a barrier
    after it (not inside an `if`, a loop, a `with` or a `try`)?"""
    block = facts.index.parent.get(stmt)
    return block is facts.module or isinstance(facts.index.parent.get(block), cst.FunctionDef)


def _rank0_first(ctx: Context, call: cst.Call, stmts: list[cst.BaseStatement]) -> None:
    """`stmts` (the folder's removal and creation, or its creation) on rank 0 only, and a barrier after
    them where the other ranks wait until the folder exists."""
    condition = ctx.rank0(call)
    for stmt in stmts:
        guard(ctx, stmt, condition)
    plan = ctx.plan
    barrier = plan.statements(
        "if {D}:\n    {dist}.barrier()  # the others wait until rank 0 has made the folder",
        D=ctx.env("DISTRIBUTED"),
        dist=plan.ref("torch.distributed", "dist", style="import"),
    )
    plan.insert_after(stmts[-1], barrier, order=Order.DOWNLOAD)


def _within(line: cst.SimpleStatementLine, manager: str) -> cst.With:
    """`line` inside `with <manager>:`, in its place."""
    return cst.With(
        items=[cst.WithItem(item=cst.parse_expression(manager))],
        body=cst.IndentedBlock(body=[line.with_changes(leading_lines=())]),
        leading_lines=line.leading_lines,
    )


def _existence_check(facts, call: cst.Call, path_code: str) -> cst.If | None:
    """The `if not os.path.exists(<same path>):` whose body is (or holds) the statement `call`."""
    parent = facts.index.parent
    expr = parent.get(call)
    if not isinstance(expr, cst.Expr):
        return None
    holder = parent.get(expr)
    if isinstance(holder, cst.SimpleStatementLine):
        block = parent.get(holder)
        owner = parent.get(block) if isinstance(block, cst.IndentedBlock) else None
    else:  # `if not os.path.exists(d): os.makedirs(d)` on one line
        owner = parent.get(holder)
    if not isinstance(owner, cst.If):
        return None
    asked = _negated(owner.test)
    return owner if asked is not None and _checked_path(facts, asked) == path_code else None


def _negated(test: cst.BaseExpression) -> cst.BaseExpression | None:
    """The expression `test` negates: `not X`, `X is False`, `X == False`; else None."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.expression
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        (target,) = test.comparisons
        if isinstance(target.operator, (cst.Is, cst.Equal)) and is_literal(target.comparator, False):
            return test.left
    return None


def _checked_path(facts, test: cst.BaseExpression) -> str | None:
    """The path `test` asks about when it is an existence test (`os.path.exists(d)`, `os.path.isdir(d)`,
    `p.exists()`), as written; else None."""
    if not isinstance(test, cst.Call):
        return None
    if facts.names.call_qual(test) in EXISTS_CHECKS:
        arg = positional(test, 0) or kwarg(test, "path")
        return code_of(arg.value) if arg is not None else None
    if method_name(test) in PATH_CHECKS and receiver(test) is not None and not test.args:
        return code_of(receiver(test))  # type: ignore[arg-type]
    return None


def _path_mkdir(call: cst.Call) -> bool:
    """`p.mkdir()`, `p.mkdir(parents=True)`: pathlib's signature (mode, parents, exist_ok), not a path
    argument (`fs.mkdir("dir")` of another API)."""
    first = positional(call, 0)
    return first is None or isinstance(first.value, cst.Integer)


def _evidently_path(facts, call: cst.Call) -> bool:
    """`Path(d).mkdir()`, `(root / "ckpt").mkdir()`: the receiver is a pathlib path by its spelling."""
    value = receiver(call)
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Divide):
        return True
    return isinstance(value, cst.Call) and (facts.names.call_qual(value) or "").endswith("Path")


def _collapsible(facts, check: cst.If) -> bool:
    """`if not exists(d): makedirs(d)` and nothing else, no comment on the `if` line: one statement."""
    if check.orelse is not None or facts.index.in_one_line_suite(check):
        return False
    if not isinstance(facts.index.parent.get(check), (cst.IndentedBlock, cst.Module)):
        return False  # an `elif`
    body = check.body
    if isinstance(body, cst.SimpleStatementSuite):
        return len(body.body) == 1
    if len(body.body) != 1 or body.header.comment is not None:
        return False
    only = body.body[0]
    return (
        isinstance(only, cst.SimpleStatementLine)
        and len(only.body) == 1
        and not any(line.comment for line in body.footer)
    )


def _collapse(node: cst.If) -> cst.BaseStatement:
    body = node.body
    if isinstance(body, cst.SimpleStatementSuite):
        return cst.SimpleStatementLine(
            body=body.body, leading_lines=node.leading_lines, trailing_whitespace=body.trailing_whitespace
        )
    only = body.body[0]
    return only.with_changes(leading_lines=[*node.leading_lines, *only.leading_lines])


def _caught(facts, call: cst.Call) -> bool:
    """Inside `try:` with an `except` that catches FileExistsError (or a base of it), or inside
    `with contextlib.suppress(FileExistsError):`."""
    for anc in facts.index.ancestors(call):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, cst.With) and facts.index.contains(anc.body, call):
            for item in anc.items:
                manager = item.item
                if isinstance(manager, cst.Call) and facts.names.call_qual(manager) == "contextlib.suppress":
                    if {code_of(a.value).split(".")[-1] for a in manager.args} & CAUGHT:
                        return True
        if isinstance(anc, cst.Try) and facts.index.contains(anc.body, call):
            for handler in anc.handlers:
                if handler.type is None:
                    return True
                types = handler.type.elements if isinstance(handler.type, cst.Tuple) else [handler.type]
                names = {code_of(t.value if isinstance(t, cst.Element) else t).split(".")[-1] for t in types}
                if names & CAUGHT:
                    return True
    return False


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.nn as nn

        out_dir = "checkpoints"
        if not os.path.exists(out_dir):
            os.makedirs(out_dir)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import os

        import torch
        import torch.nn as nn

        out_dir = "checkpoints"
        os.makedirs(out_dir, exist_ok=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Two ranks can both see the folder missing, and the second makedirs raises FileExistsError:",
    ),
    clean(
        """
        import os

        import torch
        import torch.nn as nn

        out_dir = "checkpoints"
        os.makedirs(out_dir, exist_ok=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="makedirs with exist_ok=True: safe when several ranks create the folder:",
    ),
)
