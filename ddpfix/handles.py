"""The model handles a plan leaves behind: the name kept for each plain module (`raw_model`), and
every handle that is, or that this plan makes, a DDP wrapper."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

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


__all__ = ["raw_handle", "raw_handles", "wrappers"]
