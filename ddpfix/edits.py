"""The few edit helpers rules share: rank-0 guards, keyword arguments, device tests, set_epoch."""

from __future__ import annotations

import textwrap

import libcst as cst

from .analysis import ScriptFacts
from .analysis.flow import binds
from .hoisted_calls import hoist, to_hoist
from .rule import Context, Order
from .syntax import calls_in, dotted, kwarg, method_name, walk


def guardable(facts: ScriptFacts, stmt: cst.CSTNode) -> bool:
    """A statement that can be wrapped in `if RANK == 0:` on its own line."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1:
        return False  # `msg = f(x); print(msg)`: a guard would hide the assignment from other ranks
    index = facts.index
    return not index.in_one_line_suite(stmt) and isinstance(index.parent.get(stmt), (cst.IndentedBlock, cst.Module))


def guard_site(ctx: Context, node: cst.CSTNode, message: str | None = None) -> bool:
    """Report `node` and guard the statement holding it to rank 0, when that is possible. Code only
    some ranks run already (see `Ranks.rank_guarded`) is left alone. True when the guard is planned."""
    facts = ctx.facts
    if facts.ranks.rank_guarded(node) or _plain_only(ctx, node):
        return False
    site = facts.index.site(node).stmt
    stmt = _enclosing_write_with(facts, site)
    calls = to_hoist(facts, node)  # what every rank must still run: a collective, or training
    if calls and stmt is not site:
        calls = None  # taken out of its statement, it would still be inside the guarded `with`
    if calls is None:
        ctx.report(node, (message or ctx.rule.message) + f" ({EVERY_RANK_VALUE})", fix="none")
        return False
    if not guardable(facts, stmt) or _shares_a_binding_line(facts, node, stmt):
        ctx.report(
            node, (message or ctx.rule.message) + " (shares its line with other code: guard it by hand)", fix="none"
        )
        return False
    before = len(ctx.diagnostics)
    if ctx.report(node, message):
        hoist(ctx, node, calls)
        guard(ctx, stmt, ctx.rank0(node))
        return True
    if len(ctx.diagnostics) > before and ctx.offers(ctx.diagnostics[-1]):
        ctx.plan.unmade_guards.add(stmt)  # a check: the statement a fix run guards
        ctx.plan.hoisted.extend(calls)  # ... and what it takes out of the guard first
    return False


EVERY_RANK_VALUE = (
    "a value in it trains or issues a collective every rank must join: compute it on every rank first, by hand"
)


def _shares_a_binding_line(facts: ScriptFacts, node: cst.CSTNode, stmt: cst.CSTNode) -> bool:
    """Does `node` sit on a one-line suite inside `stmt` (`except ImportError: HAS_X = False; print(...)`)
    where guarding `stmt` whole would also hide a name it binds from the other ranks?"""
    for anc in facts.index.ancestors(node):
        if anc is stmt:
            return False
        if isinstance(anc, cst.SimpleStatementSuite):
            return bool(binds(stmt))
    return False


def guard(ctx: Context, stmt: cst.CSTNode, condition: str) -> None:
    """Guard `stmt` to rank 0, never inside another planned guard: a statement whose enclosing
    statement is guarded already keeps no guard of its own, and guarding a statement drops the guards
    planned inside it."""
    plan, index = ctx.plan, ctx.facts.index
    if any(a in plan.guards for a in index.ancestors(stmt)) or _plain_only(ctx, stmt):
        return
    for inner in [s for s in plan.guards if s is not stmt and index.contains(stmt, s)]:
        del plan.guards[inner]
    plan.guard(stmt, condition)


def _plain_only(ctx: Context, node: cst.CSTNode) -> bool:
    """Will `node` run only in a plain process once the plan is applied (`Plan.plain_only`)?"""
    plain = ctx.plan.plain_only
    return bool(plain) and any(a in plain for a in ctx.facts.index.ancestors(node))


def distributed_test(ctx: Context) -> str:
    """The run-time test for "this process is in a process group": DISTRIBUTED for scripts launched
    by torchrun (or run plain), `dist.is_initialized()` for scripts that start their own processes
    (`mp.spawn`), which torchrun's WORLD_SIZE does not describe."""
    if ctx.facts.launch.spawn_calls or ctx.facts.launch.process_starts:
        dist = ctx.plan.ref("torch.distributed", "dist", style="import")
        return f"{dist}.is_initialized()"
    return ctx.env("DISTRIBUTED")


def _enclosing_write_with(facts: ScriptFacts, stmt: cst.CSTNode) -> cst.CSTNode:
    """`with open(p, "wb") as f: torch.save(sd, f)` is guarded as a whole: the open truncates the file.
    So is a longer body, when it binds nothing and holds no collective or training step."""
    block = facts.index.parent.get(stmt)
    owner = facts.index.parent.get(block) if block is not None else None
    if not isinstance(owner, cst.With):
        return stmt
    opens = any(
        isinstance(item.item, cst.Call) and dotted(item.item.func) == "open" and opens_for_writing(item.item)
        for item in owner.items
    )
    if not opens:
        return stmt
    body = owner.body.body  # type: ignore[union-attr]
    if len(body) == 1:
        return owner
    binds = any(
        isinstance(n, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.NamedExpr)) for n in walk(owner.body)
    )
    trains = any(method_name(c) in ("backward", "step") for c in calls_in(owner.body))
    if binds or trains or facts.ranks.collectives_in(owner.body):
        return stmt
    return owner


def opens_for_writing(call: cst.Call) -> bool:
    mode = kwarg(call, "mode") or (call.args[1] if len(call.args) > 1 and call.args[1].keyword is None else None)
    if mode is None or not isinstance(mode.value, cst.SimpleString):
        return False
    value = mode.value.evaluated_value
    return isinstance(value, str) and any(ch in value for ch in "wax")


def with_kwarg(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` (replaced in place when the call has it), laid out as a person would
    type it: on the line of the last argument in a one-line call, on a line of its own with the same
    indentation when the arguments are one per line, keeping a trailing comma, the comment after the
    last argument on that argument's line, and a `**kwargs` argument last."""
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == name:
            args[i] = arg.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(
        value=value,
        keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if not args:
        return call.with_changes(args=[new])
    star = next((i for i, a in enumerate(args) if a.star == "**"), None)
    if star is not None:  # keywords go before `**kwargs`, taking its place in the layout
        before = args[star - 1].comma.whitespace_after if star else call.whitespace_before_args
        sep = _plain_break(before) if isinstance(before, cst.ParenthesizedWhitespace) else _SPACE
        args.insert(star, new.with_changes(comma=cst.Comma(whitespace_after=sep)))
        return call.with_changes(args=args)
    last = args[-1]
    trailing = isinstance(last.comma, cst.Comma)
    tail = last.comma.whitespace_after if trailing else last.whitespace_after_arg  # what closes the call
    sep = _separator(call, args)
    if isinstance(sep, cst.ParenthesizedWhitespace):  # one argument per line: the new one on a line of its own
        comment_line = tail.first_line if isinstance(tail, cst.ParenthesizedWhitespace) else cst.TrailingWhitespace()
        after_last = sep.with_changes(first_line=comment_line)
        closing = (
            tail.with_changes(first_line=cst.TrailingWhitespace())
            if isinstance(tail, cst.ParenthesizedWhitespace)
            else tail
        )
    else:  # on the line of the last argument (a comment after it moves after the new one)
        after_last, closing = _SPACE, tail
    before_comma = last.comma.whitespace_before if trailing else cst.SimpleWhitespace("")
    args[-1] = last.with_changes(
        comma=cst.Comma(whitespace_before=before_comma, whitespace_after=after_last),
        whitespace_after_arg=cst.SimpleWhitespace(""),
    )
    if trailing:
        args.append(new.with_changes(comma=cst.Comma(whitespace_after=closing)))
    else:
        args.append(new.with_changes(whitespace_after_arg=closing))
    return call.with_changes(args=args)


_SPACE = cst.SimpleWhitespace(" ")


def _plain_break(ws: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """The same line break and indentation, without the comment or blank lines it carried."""
    return ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])


def _separator(call: cst.Call, args: list[cst.Arg]):
    """What goes between two arguments of this call: the break before its last argument (a line break
    and indentation in a one-per-line call, a space otherwise), or the break after `(` for one argument."""
    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
        ws = args[-2].comma.whitespace_after
    else:
        ws = call.whitespace_before_args
    return _plain_break(ws) if isinstance(ws, cst.ParenthesizedWhitespace) else _SPACE


def without_kwarg(call: cst.Call, name: str) -> cst.Call:
    """`call` without its `name=` argument; the call keeps its closing layout (a trailing comma, the
    line break before `)`) and the comments of the arguments that stay."""
    args = list(call.args)
    i = next((k for k, a in enumerate(args) if a.keyword is not None and a.keyword.value == name), None)
    if i is None:
        return call
    gone = args.pop(i)
    if i < len(args) or not args:
        return call.with_changes(args=args)
    # the last argument went: the one before it now closes the call
    prev = args[-1]
    trailing = isinstance(gone.comma, cst.Comma)
    tail = gone.comma.whitespace_after if trailing else gone.whitespace_after_arg
    own = prev.comma.whitespace_after if isinstance(prev.comma, cst.Comma) else None
    if isinstance(own, cst.ParenthesizedWhitespace) and own.first_line.comment is not None:
        if isinstance(tail, cst.ParenthesizedWhitespace):  # keep the comment on prev's line
            tail = tail.with_changes(first_line=own.first_line)
        else:
            tail = own.with_changes(last_line=cst.SimpleWhitespace(""), empty_lines=[])
    if trailing:
        comma = prev.comma if isinstance(prev.comma, cst.Comma) else cst.Comma()
        args[-1] = prev.with_changes(comma=comma.with_changes(whitespace_after=tail))
    else:
        args[-1] = prev.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=tail)
    return call.with_changes(args=args)


def cuda_test(ctx: Context, model_handle: str, at: cst.CSTNode) -> str:
    """An expression that is true when the model lives on a CUDA device, in the script's own terms."""
    dev = ctx.facts.models.device_var(at)
    if dev is not None and dev[1]:
        return f'{dev[0]}.type == "cuda"'
    return f"next({model_handle}.parameters()).is_cuda"


def torch_name(ctx: Context) -> str:
    return ctx.plan.ref("torch", "torch", style="import")


def backend_choice(ctx: Context, quote: str = '"') -> str:
    """The process group's backend by the hardware: NCCL for CUDA tensors and gloo for CPU ones when
    CUDA is available (a model the script keeps on CPU still gets a backend), gloo otherwise."""
    q = quote
    return f"{q}cpu:gloo,cuda:nccl{q} if {torch_name(ctx)}.cuda.is_available() else {q}gloo{q}"


def epoch_name(ctx: Context, loop: cst.For | cst.While, *, plan: bool = True) -> str | None:
    """How code inside the epoch loop `loop` names the epoch: its variable (`for epoch in ...`), the
    counter of `while epoch < n: ... epoch += 1`, or, for `for _ in range(n):` whose body never reads
    `_`, a new variable `epoch` the loop gets (once, whichever rule asks first); None when there is
    no such name. `plan=False` only says whether there is one: "_" when the loop would be renamed."""
    name = ctx.facts.data.epoch_variable(loop)
    if isinstance(loop, cst.While):  # a `while` counter is never renamed
        return name if name is not None else pass_counter(ctx, loop, plan=plan)
    if name != "_":
        return name
    if loop in ctx.plan.loop_names:
        return ctx.plan.loop_names[loop]
    if any(isinstance(n, cst.Name) and n.value == "_" for n in walk(loop.body)):
        return None
    if not plan:
        return "_"
    new = ctx.plan.fresh("epoch")
    ctx.plan.loop_names[loop] = new
    ctx.plan.replace(loop.target, lambda node: node.with_changes(value=new))
    return new


def pass_counter(ctx: Context, loop: cst.While, *, plan: bool = True) -> str | None:
    """A `while` loop around the pass over the loader that counts no epochs (`while step < max_steps:`,
    `while True:` left by a `break`) gets a count of its passes: `epoch = 0` before it and `epoch += 1`
    as the last statement of its body (once, whichever rule asks first). None where a `continue` of the
    loop would skip the count, or its body is on the `while` line."""
    if loop in ctx.plan.loop_names:
        return ctx.plan.loop_names[loop]
    body = loop.body
    if not isinstance(body, cst.IndentedBlock) or not body.body or any(_continues(s) for s in body.body):
        return None
    if not plan:
        return "_"
    new = ctx.plan.loop_names[loop] = ctx.plan.fresh("epoch")
    ctx.plan.insert_before(loop, ctx.plan.statements(f"{new} = 0"), order=Order.SET_EPOCH)
    ctx.plan.insert_after(body.body[-1], ctx.plan.statements(f"{new} += 1"), order=Order.SET_EPOCH)
    return new


def _continues(node: cst.CSTNode) -> bool:
    """Does `node` (a statement of a loop's body) hold a `continue` of that loop (not of a loop, or in
    a function, inside it)?"""
    if isinstance(node, cst.Continue):
        return True
    if isinstance(node, (cst.For, cst.While)):
        return any(_continues(s) for s in (node.orelse,) if s is not None)
    if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        return False
    return any(_continues(child) for child in node.children)


def engine_set_epoch(ctx: Context, handoff, sampler: str, *, test: str | None) -> None:
    """An ignite trainer runs the epochs: set the sampler's epoch in an `Events.EPOCH_STARTED` handler
    registered just before `trainer.run(...)` (ignite counts epochs from 1). `test`: "optional" (a
    sampler variable that may be None), "loader" (a loader's `.sampler`, a DistributedSampler only
    when distributed) or None (a sampler that is always there)."""
    plan = ctx.plan
    events = plan.ref("ignite.engine.Events", "Events")
    name = plan.fresh("set_sampler_epoch")
    call = f"{sampler}.set_epoch(engine.state.epoch - 1)"
    if test == "optional":
        body = f"if {sampler} is not None:\n    {call}"
    elif test == "loader":
        cls = plan.ref("torch.utils.data.distributed.DistributedSampler", "DistributedSampler")
        body = f"if isinstance({sampler}, {cls}):\n    {call}"
    else:
        body = call
    stmts = plan.statements(
        "@{engine}.on({events}.EPOCH_STARTED)\ndef {name}(engine):\n{body}",
        engine=handoff.engine,
        events=events,
        name=name,
        body=textwrap.indent(body, "    "),
    )
    run = ctx.facts.index.site(handoff.call).stmt
    body = list(getattr(ctx.facts.index.parent.get(run), "body", ()))
    at = next((i for i, s in enumerate(body) if s is run), 0)
    if at == 0:
        plan.insert_before(run, stmts, order=Order.SET_EPOCH, blank_after=True)
        return
    # after the statement before `trainer.run(...)`, set off by a blank line: run keeps its own
    stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
    plan.insert_after(body[at - 1], stmts, order=Order.SET_EPOCH)


def set_epoch_statements(ctx: Context, sampler: str, epoch: str, *, optional: bool) -> list[cst.BaseStatement]:
    if optional:
        return ctx.plan.statements(
            """
            if {s} is not None:
                {s}.set_epoch({e})
            """,
            s=sampler,
            e=epoch,
        )
    return ctx.plan.statements("{s}.set_epoch({e})", s=sampler, e=epoch)


__all__ = [
    "cuda_test",
    "engine_set_epoch",
    "epoch_name",
    "distributed_test",
    "guard",
    "guard_site",
    "guardable",
    "opens_for_writing",
    "set_epoch_statements",
    "torch_name",
    "backend_choice",
    "with_kwarg",
    "without_kwarg",
]
