"""The model handles a plan leaves behind: the name kept for each plain module (`raw_model`), and
every handle that is, or that this plan makes, a DDP wrapper."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from .analysis.model_params import (
    CUSTOM,
    FORWARD,
    INSPECTS,
    LOAD_STATE,
    PICKLES,
    RETURNS,
    STATE_DICT,
    TRAINS,
    UNWRAPS,
)
from .diagnostic import NONE, SAFE, UNSAFE
from .plain_spelling import unwrap_code
from .syntax import assign_targets, calls_in, code_of, dotted, kwarg, mentions, method_name, positional, receiver, walk

if TYPE_CHECKING:
    from .analysis import Model
    from .rule import Context


def raw_handle(ctx: Context, model: Model) -> str:
    """`raw_model` for `model`, `self.raw_model` for `self.model`, `raw_netG` for `netG` (chosen once)."""
    names = ctx.plan.raw_names
    if model.handle in names:
        return names[model.handle]
    head, _, base = model.handle.rpartition(".")
    raw_base = "raw_model" if base == "model" else f"raw_{base}"
    if head:
        name = f"{head}.{raw_base}"
        i = 2
        while ctx.facts.names.assignments(ctx.facts.module, name) or name in names.values():
            name = f"{head}.{raw_base}_{i}"
            i += 1
    else:
        name = ctx.plan.fresh(raw_base)
    names[model.handle] = name
    return name


def raw_handles(ctx: Context) -> dict[str, str]:
    """Wrapped model handle -> how to reach the plain module: `raw_model` kept before the wrap
    (ours, planned in this run, or one the script already has), or `model.module` for an
    unconditional wrap."""
    out = {handle: wrap.raw for handle, wrap in ctx.plan.wraps.items()}
    for handle, raw in ctx.facts.wraps.existing_raws().items():
        out.setdefault(handle, raw)
    return out


def wrappers(ctx: Context) -> dict[str, tuple[str, cst.CSTNode]]:
    """Every handle that is (or this plan makes) a DDP wrapper -> (how to reach the plain module, the
    statement from which on the handle is the wrapper). Covers `raw_handles` (our wraps, the script's
    `model = DDP(model)`, a DataParallel replaced by one) and `ddp_model = DDP(model)`, where `model`
    stays the plain module."""
    facts = ctx.facts
    out: dict[str, tuple[str, cst.CSTNode]] = {}
    by_handle = {m.handle: m for m in facts.models.trained}
    for handle, raw in raw_handles(ctx).items():
        planned = ctx.plan.wraps.get(handle)
        stmt = planned.stmt if planned is not None else None
        model = by_handle.get(handle)
        if stmt is None and model is not None:
            existing = facts.models.wrapped(model)
            stmt = facts.index.site(existing).stmt if existing is not None else facts.models.wrap_point(model).anchor
        if stmt is not None:
            out[handle] = (raw, stmt)
    for handle, found in facts.wraps.separate_handles().items():
        out.setdefault(handle, found)
    return out


def once_wrapped(ctx: Context, handle: str, now: str, then: str) -> str:
    """A finding's words for a wrapper the script has (`now`), or for one only this conversion adds
    (`then`, after "after the DDP wrap, "): a script that is not distributed yet has no wrapper to speak of."""
    return f"after the DDP wrap, {then}" if handle in ctx.plan.wraps else now


def wrap_level(ctx: Context, handle: str) -> tuple[str | None, str]:
    """The fix level of a finding routed through the wrap this plan would make of `handle` (None: the
    rule's own), and the words saying why, when that wrap is offered at a weaker level (DDP301 cannot
    make it here, or only with --unsafe-fixes): `check` then promises no fix `apply` does not make."""
    planned = ctx.plan.wraps.get(handle)
    if planned is None or planned.level == SAFE:
        return None, ""
    if planned.level == UNSAFE:
        return UNSAFE, f" (made only with --unsafe-fixes, with the wrap of {handle}: see DDP301)"
    return NONE, f" (no fix: {handle} is not wrapped here, see DDP301)"


def raw_at(ctx: Context, handle: str, raw: str, wrap_stmt: cst.CSTNode, at: cst.CSTNode) -> str | None:
    """How code at `at` reaches the plain module behind the wrapper `handle`: `raw` where that name
    exists (the function of the wrap and functions nested in it, any function for a module-level
    name, any method of the class for `self.raw_model`), else `handle.module` after an unconditional
    wrap the script has; None when neither exists there."""
    index = ctx.facts.index
    wraps = ctx.facts.wraps
    if raw.startswith("getattr("):  # a conditional wrap without a kept name: spelled for where it is read
        return unwrap_code(index, at, handle)
    if raw.endswith(".module") or raw == handle:
        return raw
    if raw.startswith("self."):
        cls = index.enclosing(wrap_stmt, cst.ClassDef)
        if cls is not None and index.enclosing(at, cst.ClassDef) is cls:
            return raw
    elif "." not in raw:
        wrap_func = index.enclosing(wrap_stmt, cst.FunctionDef)
        func = index.enclosing(at, cst.FunctionDef)
        while func is not None and func is not wrap_func and not wraps.binds_locally(func, raw):  # type: ignore[arg-type]
            func = index.enclosing(func, cst.FunctionDef)
        if func is wrap_func:
            return raw
    if wraps.unconditional(wrap_stmt, handle):
        return f"{handle}.module"
    return None


def keys_kept(ctx: Context, handle: str, wrap_stmt: cst.CSTNode) -> bool:
    """Does the script keep the wrapper's `module.` keys on purpose for `handle`, a DDP wrapper it
    builds itself: it saves `handle.state_dict()` to a file and loads that same file (the same path
    expression) into `handle` after the wrap? A resume through the wrapper has the prefix on both sides."""
    if handle in ctx.plan.wraps:
        return False  # a wrap this plan adds: the script's checkpoints are a plain run's
    facts = ctx.facts

    def through(method: str) -> list[cst.Call]:
        return [
            c
            for c in facts.names.method_calls(method)
            if receiver(c) is not None
            and dotted(receiver(c)) == handle  # type: ignore[arg-type]
            and facts.wraps.after_wrap(c, handle, wrap_stmt)
        ]

    saved = {p for c in through("state_dict") for p in _paths(facts, c, "torch.save", 1, "f")}
    return bool(saved) and any(
        p in saved for c in through("load_state_dict") for p in _paths(facts, c, "torch.load", 0, "f")
    )


def _paths(facts, call: cst.Call, io: str, slot: int, keyword: str) -> set[str]:
    """The file paths (as written) of the `torch.save` that writes what `call` (`model.state_dict()`)
    returns, or of the `torch.load` whose result `call` (`model.load_state_dict(...)`) takes, directly
    or through a name bound in the same scope (`state = {"model": ...}` then `torch.save(state, p)`;
    `ckpt = torch.load(p)` then `model.load_state_dict(ckpt["model"])`)."""
    index = facts.index
    scope = index.scope_of(call)
    stmt = index.site(call).stmt
    names = set(assign_targets(stmt)) if io == "torch.save" else set()
    if io == "torch.load":
        for arg in call.args:
            names |= {dotted(n) for n in walk(arg.value) if isinstance(n, cst.Name)}  # type: ignore[misc]
    out = set()
    for io_call in facts.names.calls_to(io):
        if index.scope_of(io_call) is not scope:
            continue
        where = positional(io_call, slot) or kwarg(io_call, keyword)
        if where is None:
            continue
        if io == "torch.save":
            first = positional(io_call, 0)
            hit = index.contains(io_call, call) or (
                first is not None and index.before(stmt, io_call) and any(mentions(first.value, n) for n in names)
            )
        else:
            hit = index.contains(call, io_call) or (
                index.before(io_call, call) and bool(set(assign_targets(index.site(io_call).stmt)) & names)
            )
        if hit:
            out.add(code_of(where.value))
    return out


def handles_prefix(ctx: Context, node: cst.CSTNode) -> bool:
    """Does the code around `node` (a `state_dict()` or `load_state_dict(...)` call) handle the
    `module.` prefix itself: a `"module."` string in its statement, or, for a name loaded, in a
    statement that builds that name before (`loaded["module." + key] = value`)?"""
    facts = ctx.facts
    strings = [s for s, value in facts.names.string_literals("module.") if value.startswith("module.")]
    if not strings:
        return False
    stmt = facts.index.site(node).stmt
    if any(facts.index.contains(stmt, s) for s in strings):
        return True
    arg = node.args[0].value if isinstance(node, cst.Call) and node.args else None
    name = dotted(arg) if isinstance(arg, cst.Name) else None
    if name is None:
        return False
    scope = facts.index.scope_of(node)
    for s in strings:
        at = facts.index.site(s).stmt
        if facts.index.scope_of(s) is scope and facts.index.before(at, node) and mentions(at, name):
            return True
    return False


@dataclass(eq=False)
class Handoff:
    """`evaluate(model)`, `save_checkpoint(model, path)`: the wrapper handed to a helper that needs
    the plain module. `code` is the one rule that reports it, `raw` the plain module spelled at the
    call (None: no name reaches it there), `fixable` whether passing `raw` keeps the behaviour."""

    call: cst.Call
    arg: cst.Arg
    handle: str
    raw: str | None
    uses: set[str]
    code: str
    rank0: bool
    fixable: bool
    kept: bool = False  # the helper hands the model back and the script keeps what it returns

    @property
    def why(self) -> str:
        """Why passing the plain module is not the fix (for a handoff that is not `fixable`)."""
        if self.rank0 and self.code == "DDP403":
            return "on rank 0 only the other ranks keep the old weights"
        if TRAINS in self.uses:
            return "it trains through it"
        if self.kept:
            return f"it hands {self.handle} back, and what it returns is kept here"
        return "no name reaches the plain module here"


def handoffs(ctx: Context) -> list[Handoff]:
    """Calls that hand the DDP wrapper to a helper of the script (this file or its own modules) that
    needs the plain module: a forward on rank 0 only (DDP103), a `load_state_dict` (DDP403), a
    `state_dict` (DDP402), an attribute only the model has, or a trace, export or summary of it
    (`writer.add_graph(model, x)`, DDP308). A helper that reaches `.module`
    itself or hands the model back (`unwrap_model(model)`) needs nothing. Passing the plain module is
    the fix unless the helper trains (its forward must go through DDP)."""
    facts = ctx.facts
    out = []
    for handle, (raw, wrap_stmt) in wrappers(ctx).items():
        for call in facts.index.calls:
            for arg in call.args:
                if arg.star or dotted(arg.value) != handle or not facts.wraps.after_wrap(call, handle, wrap_stmt):
                    continue
                uses = facts.helpers.uses(call, arg)
                if uses is None:  # a class of the script's modules that keeps it: what only the model has
                    built = facts.helpers.constructor_uses(call, arg) or set()
                    uses = built & {CUSTOM, INSPECTS, FORWARD, TRAINS} if built & {CUSTOM, INSPECTS} else None
                if not uses or UNWRAPS in uses:
                    continue
                # a helper that hands the model back (`return model`): passing the plain module is the
                # fix only where the script drops what it returns (`load_weights(model, path)`); kept
                # (`model = load_weights(model, path)`), it would replace the wrapper
                kept = RETURNS in uses and not isinstance(facts.index.parent.get(call), cst.Expr)
                rank0 = rank0_only(ctx, call)
                if rank0 and FORWARD in uses:
                    code = "DDP103"
                elif LOAD_STATE in uses:
                    code = "DDP403"
                elif STATE_DICT in uses or PICKLES in uses:
                    code = "DDP402"
                elif CUSTOM in uses or INSPECTS in uses:
                    code = "DDP308"
                else:
                    continue
                spelled = raw_at(ctx, handle, raw, wrap_stmt, call)
                fixable = spelled is not None and TRAINS not in uses and not (code == "DDP403" and rank0) and not kept
                out.append(Handoff(call, arg, handle, spelled, uses, code, rank0, fixable, kept))
    return out


def rank0_only(ctx: Context, node: cst.CSTNode) -> bool:
    """Is `node` in the body of an `if` that rank 0 alone takes (`if rank == 0:`), in its function? (A
    test no rank is known to take is not one.)"""
    index = ctx.facts.index
    child = node
    for anc in index.ancestors(node):
        kind = type(anc)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
        if kind is cst.FunctionDef:
            return False
        if kind is cst.If and child is anc.body:  # type: ignore[attr-defined]
            zero, other = ctx.facts.ranks.takes(anc.test)
            if other is False and zero is not False:
                return True
        child = anc
    return False


NO_GRAD = ("no_grad", "inference_mode")


def in_training_step(facts, node: cst.CSTNode) -> bool:
    """Does `node` run in a training step: in a loop (or a function) that itself calls `backward()`
    after it (a sample drawn after the step's `backward()` feeds no gradient of that step), and not
    under `torch.no_grad()` / `torch.inference_mode()`?"""
    if under_no_grad(facts, node):
        return False
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef)):
            return any(
                method_name(c) == "backward" and _step_owner(facts, c) is anc and facts.index.before(node, c)
                for c in calls_in(anc.body)
            )
    return False


def _step_owner(facts, node: cst.CSTNode) -> cst.CSTNode | None:
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While, cst.FunctionDef)):
            return anc
    return None


def under_no_grad(facts, node: cst.CSTNode) -> bool:
    """Inside `with torch.no_grad():` / `inference_mode()`, or a function decorated with either."""
    for anc in facts.index.ancestors(node):
        if isinstance(anc, cst.With):
            for item in anc.items:
                expr = item.item.func if isinstance(item.item, cst.Call) else item.item
                if (dotted(expr) or "").split(".")[-1] in NO_GRAD:
                    return True
        if isinstance(anc, cst.FunctionDef):
            for dec in anc.decorators:
                expr = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
                if (dotted(expr) or "").split(".")[-1] in NO_GRAD:
                    return True
    return False


__all__ = [
    "Handoff",
    "handles_prefix",
    "in_training_step",
    "keys_kept",
    "under_no_grad",
    "handoffs",
    "rank0_only",
    "raw_at",
    "raw_handle",
    "raw_handles",
    "wrappers",
    "wrap_level",
]
