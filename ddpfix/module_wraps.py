"""DDP301 across files: the models a class of the script's own modules builds and trains itself
(`Solver(loader, config).train()`, with `self.G = Generator(...)` and `self.g_optimizer =
torch.optim.Adam(self.G.parameters(), ...)` in solver.py).

The wrap belongs in that class, after each model is built (and moved, initialised, loaded) and before
the optimizer built over its parameters, so the optimizer holds the wrapper's parameters:

    self.G = Generator(self.z_dim, image_size)
    if dist.is_initialized():
        self.G = DDP(self.G, device_ids=[torch.cuda.current_device()] if next(self.G.parameters()).is_cuda else None)
    self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr, betas=(0.5, 0.999))

The test is decided at run time, like the module's rank-0 guards (module_guards.py): a plain run, or
any other entry point that imports the class without a process group, keeps the plain module.
`device_ids` is the current CUDA device (the entry's setup sets it to LOCAL_RANK), given only when the
model's parameters are on CUDA.

The class is edited only where `ModuleEdits` allows it, and only where the wrapper can stand in for
the model everywhere the class uses it after the wrap: calls (the forward), the methods of nn.Module
that DDP serves as the model would (`parameters()`, `train()`, `state_dict()`, whose 'module.' keys
DDP402 unwraps), and the uses module_routes.py reads through the plain module (a state loaded into
it, what only the model has). A model the class moves after the wrap, hands to a function or whose
forward-running method the training step calls is left alone, and so is the whole script: without
the wrap, a process group and a sampler would train one unsynchronised copy per rank (`withheld`).
"""

from __future__ import annotations

import libcst as cst

from .analysis.class_models import OPTIMIZER_WORDS
from .analysis.local_writes import shown
from .analysis.module_summary import Finding
from .class_loaders import shard_blocker, trains_on_loaders
from .double_backward import lone_penalty, penalty_words
from .edits import cuda_test
from .local_wraps import local_wrap_point
from .module_epochs import function_of, owner_of
from .module_routes import mixed_keys, route, routes
from .rule import RUNTIME, Context, Order, Rule
from .syntax import dotted, walk

DDP = "torch.nn.parallel.DistributedDataParallel"


def targets(cls) -> list[tuple[str | None, str]]:
    """What the fix wraps in `cls` (a class summary): (None, `self.G`) for each model attribute it trains,
    (method, `model`) for each model a method builds and trains as its local (local_wraps.py)."""
    return [(None, f"self.{attr}") for attr, _ in cls.trained] + [(m, n) for m, n, _ in cls.local_models]


def wrap_blocker(ctx: Context, rule: Rule, summary, cls) -> str | None:
    """Why the models `cls` (a class summary of the module `summary`) builds cannot be wrapped there
    (None: they can, checked on a trial of the edit)."""
    others = ctx.others
    if others is None:
        return "cross-file edits are off"
    if ("wrap", summary.path, cls.name) in others.planned:
        return None  # kept already
    attrs = [attr for attr, _ in cls.trained]
    return (
        _read_by_the_script(ctx, cls, attrs)
        or _data_not_found(ctx, rule, summary, cls)
        or others.why_not(summary.path)
        or others.trial(
            summary.path,
            rule,
            _planner(cls, targets(cls), others.shown(summary.path), plain=_plain_saves(ctx)),
            key=("wrap", cls.name, _plain_saves(ctx)),
        )
    )


def _data_not_found(ctx: Context, rule: Rule, summary, cls) -> str | None:
    """No training DataLoader of the script was found (built there, or by a function of its modules it
    calls: loader_factory.py), nor one the class builds itself and the fix shards there
    (class_loaders.py): the fix could not shard what the wrapped models train on, so every rank would
    train the same batches while the conversion looked done. Left to the user, saying so."""
    if ctx.facts.data.training_loaders or ctx.facts.data.foreign_loaders():
        return None
    if trains_on_loaders(ctx, summary, cls):
        why = shard_blocker(ctx, rule, summary, cls)
        return (
            None if why is None else f"the DataLoader {cls.shown} trains on cannot be sharded where it is built: {why}"
        )
    return (
        "no DataLoader the script builds was found to reach its training, so the fix could not shard the data "
        "it trains on: hand it a loader the script builds, or give that loader a DistributedSampler by hand"
    )


def _read_by_the_script(ctx: Context, cls, attrs: list[str]) -> str | None:
    """A model of the class the script itself reaches through the object it trains with
    (`solver.G.image_size`, `torch.save(solver.G.state_dict(), ...)`): the script would get the wrapper.
    Only a call of the model (its forward) is the same through DDP."""
    facts = ctx.facts
    owners = {
        dotted(call.func.value)
        for call, _summary, other in facts.training.models_built_in_modules
        if other is cls and isinstance(call.func, cst.Attribute)
    }
    names = {f"{owner}.{attr}" for owner in owners if owner for attr in attrs}
    for node in walk(facts.module):
        if isinstance(node, cst.Attribute) and dotted(node) in names:
            parent = facts.index.parent.get(node)
            if not (isinstance(parent, cst.Call) and parent.func is node):
                line = facts.index.position(node).start.line
                return f"the script reads {dotted(node)} at line {line}, which would be the DDP wrapper"
    return None


def keep_wraps(ctx: Context, rule: Rule, summary, cls) -> None:
    """Make the wrap `wrap_blocker` allowed part of this pass's fix (once per class)."""
    others = ctx.others
    assert others is not None
    key = ("wrap", summary.path, cls.name)
    if key not in others.planned:
        others.planned.add(key)
        others.keep(summary.path, rule, _planner(cls, targets(cls), others.shown(summary.path), _plain_saves(ctx)))


def wrapped_here(ctx: Context, rule: Rule, summary, cls) -> bool:
    """Does this pass wrap the models `cls` builds, in its module (DDP301 fixed, the wrap possible, and
    no other class the script trains through withholding the conversion)?"""
    return (
        (not ctx.fixing or "DDP301" in ctx.fixing)
        and wrap_blocker(ctx, rule, summary, cls) is None
        and withheld(ctx) is None
    )


def withheld(ctx: Context) -> str | None:
    """`Solver in solver.py (...)` when a class of the script's modules builds the models it trains and
    this pass does not wrap them there: no process group and no sampler then (no half conversion)."""
    rule = ctx.rule
    for _call, summary, cls in ctx.facts.training.models_built_in_modules:
        where = f"{cls.shown} in {summary.path.name}"
        if ctx.fixing and "DDP301" not in ctx.fixing:
            return f"{where} builds the models it trains and the fix does not wrap them there (DDP301 is not fixed)"
        why = wrap_blocker(ctx, rule, summary, cls) if rule is not None else "no rule asks"
        if why is not None:
            return f"{where} builds the models it trains and the fix cannot wrap them there (DDP301: {why})"
    return None


def wraps_in_modules(ctx: Context, rule: Rule) -> None:
    """Report each of the script's calls that trains models a class of its modules builds itself, and
    wrap them in that class where the fix may."""
    facts = ctx.facts
    for call, summary, cls in facts.training.models_built_in_modules:
        places = ", ".join(
            [
                f"self.{attr} at {shown(facts.modules, Finding('', summary.path, line, ''))}"
                for attr, line in cls.trained
            ]
            + [
                f"{name} in {method}() at {shown(facts.modules, Finding('', summary.path, line, ''))}"
                for method, name, line in cls.local_models
            ]
        )
        builder = "it" if cls.function else cls.name
        head = f"{dotted(call.func) or cls.name}() trains models {builder} builds itself and never wraps in "
        head += f"DistributedDataParallel ({places})"
        why = wrap_blocker(ctx, rule, summary, cls)
        if why is not None:
            message = f"{head}: wrap each there, after it is built and before its optimizer (the fix does not: {why})"
            ctx.report(call, message, fix="none")
        elif ctx.report(
            call,
            f"{head}: the fix wraps each there, after it is built and before its optimizer{_routed(ctx, rule, summary, cls)}",
        ):
            keep_wraps(ctx, rule, summary, cls)


def _routed(ctx: Context, rule: Rule, summary, cls) -> str:
    """The words for the uses the wrap routes to the plain module, with their lines ('' for none)."""
    others = ctx.others
    assert others is not None
    uses: list[tuple[int, str]] = []
    where = others.shown(summary.path)
    if others.why_not(summary.path) is None:
        others.trial(summary.path, rule, _planner(cls, targets(cls), where, _plain_saves(ctx), uses))
    if not uses:
        return ""
    places = ", ".join(f"{use} at {where}:{line}" for line, use in sorted(set(uses))[:3])
    more = f" and {len(set(uses)) - 3} more" if len(set(uses)) > 3 else ""
    return f', and reaches the plain module through getattr(..., "module", ...) for what the wrapper lacks ({places}{more})'


def _plain_saves(ctx: Context) -> bool:
    """Does this pass make the class's `self.G.state_dict()` saves the plain module's (DDP402 fixed)?"""
    return not ctx.fixing or "DDP402" in ctx.fixing


def _planner(owner, wrapped: list, where: str, plain: bool = True, routed: list[tuple[int, str]] | None = None):
    """Wrap each of `wrapped` (`targets`) in `owner` (a class summary, or a module-level function's owner
    record) of the module (`where`: its file as shown), on the module's own context, and route the uses
    the wrapper does not serve to the plain module (module_routes.py); `routed` gets (line, use) for each
    of those. `plain`: the class's saves of the models' state_dict() become the plain module's (DDP402),
    as the loads routed there read."""

    def plan(ctx: Context) -> str | None:
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        module = ctx.facts.module
        cls = owner_of(module, owner.name, owner.function)
        if cls is None:
            return f"{owner.shown} is not defined at the top level of the module"
        handed = sorted(_optimized(cls) - {name for method, name in wrapped if method is None})
        if handed:
            return f"{owner.name} also trains {handed[0]}, which it is handed: the caller's to wrap"
        points = []
        for method, name in wrapped:
            scope = cls if method is None else function_of(module, owner.member(method))
            if scope is None:
                return f"{method} is not a method of {owner.name}"
            point = _wrap_point(cls, name) if method is None else local_wrap_point(scope, name, _assigns, _optimizes)
            if isinstance(point, str):
                return point
            penalty = lone_penalty(cls, name) if isinstance(cls, cst.ClassDef) else None
            if penalty is not None:
                return penalty_words(name, f"{where}:{ctx.facts.index.position(penalty).start.line}")
            uses = routes(ctx, scope, name, point[1], where)
            if isinstance(uses, str):
                return uses
            why = None if plain else mixed_keys(ctx, scope, name, uses, where)
            if why is not None:
                return why
            points.append((name, point[0]))
            route(ctx, uses, name)
            if routed is not None:
                routed.extend((ctx.facts.index.position(use).start.line, dotted(use)) for use in uses)
        for name, anchor in points:
            insert_wrap(ctx, name, anchor)
        return None

    return plan


def insert_wrap(ctx: Context, m: str, anchor: cst.CSTNode) -> None:
    """`if dist.is_initialized(): m = DDP(m, ...)` after `anchor`, in a module of the script's (the
    caller launches: the process group is asked at run time)."""
    stmts = ctx.plan.statements(
        """
        if {D}:
            {m} = {ddp}({m}, device_ids=[{device}] if {cuda} else None)
        """,
        D=ctx.env("DISTRIBUTED"),
        m=m,
        ddp=ctx.plan.ref(DDP, "DDP"),
        device=RUNTIME["LOCAL_RANK"].format(torch=ctx.plan.ref("torch", "torch", style="import")),
        cuda=cuda_test(ctx, m, anchor),
    )
    ctx.plan.insert_after(anchor, stmts, order=Order.WRAP)


def _wrap_point(cls: cst.ClassDef, name: str) -> tuple[cst.CSTNode, list] | str:
    """The statement the wrap of `name` follows (the last one that builds, moves or loads it before its
    optimizer, in the block that builds it) and the statements that run before the wrap; or why none."""
    builds = [n for n in walk(cls) if isinstance(n, cst.SimpleStatementLine) and _assigns(n, name)]
    if len(builds) != 1:
        return f"{name} is assigned {len(builds)} times in {cls.name.value}: the fix wraps a model built once"
    build = builds[0]
    for func in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
        block = next((b for b in walk(func) if isinstance(b, cst.IndentedBlock) and build in b.body), None)
        if block is None:
            continue
        body = list(block.body)
        start = body.index(build)
        optimizer = next((i for i in range(start + 1, len(body)) if _optimizes(body[i], name)), None)
        if optimizer is None:
            return f"the optimizer over {name}.parameters() is not built in the block that builds {name}"
        last = max(i for i in range(start, optimizer) if i == start or _mentions(body[i], name, cls))
        return body[last], body[start : last + 1]
    return f"{name} is not built in a method of {cls.name.value}"


def _assigns(stmt: cst.SimpleStatementLine, name: str) -> bool:
    return any(
        isinstance(s, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and any(dotted(t) == name for t in _targets(s))
        for s in stmt.body
    )


def _targets(small: cst.BaseSmallStatement) -> list[cst.BaseExpression]:
    if isinstance(small, cst.Assign):
        return [t.target for t in small.targets]
    return [small.target]  # type: ignore[attr-defined]


def _optimizes(stmt: cst.CSTNode, name: str) -> bool:
    """Does `stmt` read `name.parameters()` (an optimizer built over them)?"""
    return any(
        isinstance(n, cst.Call)
        and isinstance(n.func, cst.Attribute)
        and n.func.attr.value in ("parameters", "named_parameters")
        and dotted(n.func.value) == name
        for n in walk(stmt)
    )


def _optimized(cls: cst.ClassDef) -> set[str]:
    """`self.G` for each `self.G.parameters()` an optimizer of the class is built over."""
    out = set()
    for node in walk(cls):
        name = dotted(node.func) if isinstance(node, cst.Call) else None
        if name is None or not any(word in name for word in OPTIMIZER_WORDS) or not node.args:
            continue
        for inner in walk(node.args[0].value):
            if (
                isinstance(inner, cst.Call)
                and isinstance(inner.func, cst.Attribute)
                and inner.func.attr.value in ("parameters", "named_parameters")
            ):
                owner = dotted(inner.func.value) or ""
                if owner.startswith("self.") and owner.count(".") == 1:
                    out.add(owner)
    return out


def _mentions(stmt: cst.CSTNode, name: str, cls: cst.ClassDef | None = None) -> bool:
    """Does `stmt` read or write `name`, itself or through a method of `cls` it calls (`self.check_cuda(...)`
    moving `self.D` to the GPU)?"""
    if any(isinstance(n, (cst.Attribute, cst.Name)) and dotted(n) == name for n in walk(stmt)):
        return True
    if cls is None:
        return False
    methods = {m.name.value: m for m in cls.body.body if isinstance(m, cst.FunctionDef)}
    for call in walk(stmt):
        called = dotted(call.func) if isinstance(call, cst.Call) else None
        if called and called.startswith("self.") and called.count(".") == 1 and called[5:] in methods:
            if _mentions(methods[called[5:]].body, name):
                return True
    return False


__all__ = ["insert_wrap", "keep_wraps", "withheld", "wrap_blocker", "wrapped_here", "wraps_in_modules"]
