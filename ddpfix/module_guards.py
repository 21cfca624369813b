"""DDP401, DDP405, DDP406 and DDP407 across files: a checkpoint saved, a log file opened, a line printed
or an experiment tracker created on every rank inside one of the script's own modules
(`Trainer.save()` in trainer.py ends in `torch.save`, `Trainer.log()` prints, `Trainer.__init__` runs
`self.writer = SummaryWriter()`), reached from the script's call (`Trainer(...).fit(2)`,
`trainer.save(path)`). A tracker's rule plans its own edit of the module (`make_planner`): the
tracker and every use of it there become rank-0 only together.

The finding is reported at the script's call, naming the module's file and line; the fix guards the
statement there, in the module, to rank 0 with a test decided at run time:

    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(self.model.state_dict(), path)

(`import torch.distributed as dist` added to the module when it lacks one.) That test is true in a
plain run and on rank 0 of any distributed one, however it was launched (torchrun, `mp.spawn`, a
launcher of another entry point), so a module imported by several entry points stays correct for
each of them, and the entry script need not hand the module anything. A statement the module already
guards, or that only a rank-guarded caller reaches, is left alone.

The module is edited only where `ModuleEdits` allows it (see module_edits.py) and where the statement
can be guarded on its own (it does not share its line with other code, and its arguments call no
method of the object nor function of the module handed the model it trains,
`print(f"{evaluate(model, loader):.4f}")`, whose forward through the wrapper would run on rank 0
alone); otherwise the finding is reported without a fix, saying why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import libcst as cst

from .analysis.effects import WRITERS
from .analysis.local_writes import called, shown, writes_through
from .analysis.module_summary import Finding
from .edits import guard_site
from .object_guards import guard_object
from .rule import NONE, Context, Rule
from .syntax import dotted, walk

Match = Callable[[object, cst.Call], bool]  # (the module's facts, a call) -> is it the write found there?
# (the module's lines, what, match, the module's file, lines guarded) -> the planner that guards them
MakePlanner = Callable[[list[int], str, Match, str, list[int]], Callable[[Context], "str | None"]]


def guard_module_writes(
    ctx: Context,
    rule: Rule,
    kind: str,
    what: str | None,
    harm: str,
    match: Match,
    skip: Callable[[cst.Call], bool] | None = None,
    make_planner: MakePlanner | None = None,
    verb: str = "runs",
    instead: Callable[[Context, cst.Call], list[cst.CSTNode] | None] | None = None,
    last: tuple[MakePlanner, str] | None = None,
) -> None:
    """Report each of the script's calls that runs `what` (found by the summaries as `kind`; None: named
    as the summaries name each, `torch.save`, `imageio.mimsave`, ...) on every rank in one of its own
    modules, and guard it there to rank 0 where the fix may (`skip`: calls to leave alone;
    `make_planner`: how the module's edit is planned, by default a guard of each statement found;
    `instead`: the script's statements to guard where the module cannot be edited; `last`: another
    planner of the module's edit, and the words for it, where neither can be made)."""
    make = make_planner or guard_statements
    facts = ctx.facts
    named = what
    for call in facts.module_calls:
        found = writes_through(facts.index, facts.names, facts.modules, call, kind)
        if not found or facts.ranks.rank_guarded(call) or (skip is not None and skip(call)):
            continue
        what = named or " and ".join(sorted({f.detail for f in found}))  # None: as the summaries name them
        where = ", ".join(shown(facts.modules, f) for f in found[:3])
        lines = by_path(found)
        guarded: list[int] = []
        why = why_not_guarded(ctx, rule, lines, what, match, guarded, make)
        if why is None and not guarded:
            continue  # the module's own analysis sees a rank test there (`if self.rank != 0: return`)
        head = f"{called(call)}() {verb} {what} on every rank ({where}): {harm}"
        if why is not None:
            statements = instead(ctx, call) if instead is not None else None
            if statements is None and last is not None:  # the other planner: its reason, where it has one
                other = why_not_guarded(ctx, rule, lines, what, match, [], last[0])
                if other is None:
                    if ctx.report(call, f"{head}; {last[1]}"):
                        keep_guards(ctx, rule, lines, what, match, last[0])
                    continue
                why = other
            if statements is None:
                ctx.report(
                    call,
                    f"{head}; guard it to rank 0 there (the fix would edit that file, and does not: {why})",
                    fix=NONE,
                )
            elif ctx.report(call, f"{head}; the fix builds and uses it on rank 0 only, here ({why})"):
                guard_object(ctx, statements, call)
            continue
        if not ctx.report(call, f"{head}; the fix guards it to rank 0 there"):
            continue
        keep_guards(ctx, rule, lines, what, match, make)


def keep_guards(
    ctx: Context, rule: Rule, lines: dict[Path, list[int]], what: str, match: Match, make: MakePlanner
) -> None:
    """Make the guards `why_not_guarded` allowed part of this pass's fix (each line once)."""
    assert ctx.others is not None
    for path, path_lines in lines.items():
        new = [n for n in path_lines if (rule.code, path, n) not in ctx.others.planned]
        if new:
            ctx.others.planned.update((rule.code, path, n) for n in new)
            ctx.others.keep(path, rule, make(new, what, match, ctx.others.shown(path), []))


def by_path(found: list[Finding]) -> dict[Path, list[int]]:
    out: dict[Path, list[int]] = {}
    for f in found:
        out.setdefault(f.path, []).append(f.line)
    return {path: sorted(set(lines)) for path, lines in out.items()}


def why_not_guarded(
    ctx: Context,
    rule: Rule,
    lines: dict[Path, list[int]],
    what: str,
    match: Match,
    guarded: list[int],
    make: MakePlanner,
) -> str | None:
    """Why the modules are not edited, or None when each edit is made and checked (`guarded` gets the
    lines it guards)."""
    others = ctx.others
    if others is None:
        guarded.append(0)
        return "cross-file edits are off"
    for path, path_lines in lines.items():
        planner = make(path_lines, what, match, others.shown(path), guarded)
        why = others.why_not(path) or others.trial(path, rule, planner)
        if why is not None:
            return why
    return None


def guard_statements(lines: list[int], what: str, match: Match, where: str, guarded: list[int]):
    """Guard the statements at `lines` of the module to rank 0, on that module's own context (`guarded`
    gets the lines guarded: none where the module's own analysis finds each under a rank test already)."""

    def plan(ctx: Context) -> str | None:
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        facts = ctx.facts
        for line in lines:
            call = next(
                (
                    c
                    for c in _statement_calls(facts, lambda c: match(facts, c))
                    if facts.index.position(c).start.line == line
                ),
                None,
            )
            if call is None:
                return f"the {what} at {where}:{line} is not a statement of its own"
            if facts.ranks.rank_guarded(call):
                continue
            method = _object_call(facts, call)
            if method is not None and _with_of(facts, call) is None:
                # `print(f"... {self.validate():.1f}")`: guarded, a forward it runs would run on rank 0 alone
                return f"the {what} at {where}:{line} calls {method}(), which would then run on rank 0 only"
            if not guard_site(ctx, _with_of(facts, call) or call):
                return f"the {what} at {where}:{line} shares its line with other code"
            guarded.append(line)
        return None

    return plan


def _object_call(facts, call: cst.Call) -> str | None:
    """A method of the object (`self.validate()`) or a module it holds (`self.model(x)`: a forward), or a
    function of the module handed a model it trains (`evaluate(model, loader)`), called inside `call`'s
    arguments; not a method of what it holds (`self.model.state_dict()`), nor a helper handed no model
    (`format_time(dt)`)."""
    models = None
    for arg in call.args:
        for node in walk(arg.value):
            name = dotted(node.func) if type(node) is cst.Call else None
            if name is not None and name.startswith("self.") and name.count(".") == 1:
                return name
            if name is not None and facts.index.callee_of(node) is not None:
                models = {m.handle for m in facts.models.trained} if models is None else models
                if any(dotted(a.value) in models for a in node.args):
                    return name
    return None


def _statement_calls(facts, pred) -> list[cst.Call]:
    """Calls that are statements of their own: `f(...)` on its own line, or the one item of a `with`
    (`with open(path, "wb") as f:`, guarded with its body)."""
    return [
        c
        for c in facts.index.calls
        if (isinstance(facts.index.parent.get(c), cst.Expr) or _with_of(facts, c)) and pred(c)
    ]


def _with_of(facts, call: cst.Call) -> cst.With | None:
    """The `with` statement whose one item `call` is, else None."""
    item = facts.index.parent.get(call)
    node = facts.index.parent.get(item) if isinstance(item, cst.WithItem) else None
    return node if isinstance(node, cst.With) and len(node.items) == 1 else None


def is_save(facts, call: cst.Call) -> bool:
    """`torch.save(...)` or another function that writes the file it is handed (effects.WRITERS)."""
    return facts.names.call_qual(call) in WRITERS


def is_print(facts, call: cst.Call) -> bool:
    return isinstance(call.func, cst.Name) and call.func.value == "print"


__all__ = [
    "by_path",
    "guard_module_writes",
    "guard_statements",
    "is_print",
    "is_save",
    "keep_guards",
    "why_not_guarded",
]
