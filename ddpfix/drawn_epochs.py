"""Epochs where no loop runs them: batches drawn with next() from `it = iter(loader)`, made once and
made again when it runs out (`except StopIteration: it = iter(loader)`), in the training function or
in a generator that hands its batches to the training loop (`def sample_data(): ... yield
next(loader)`). Each pass over the loader is an epoch: a count of the passes sets the sampler's epoch
before each `iter()` (module_epochs.plan_drawn_passes). DDP201 plans it with the sampler it adds;
DDP204 reports a sampler the script built itself."""

from __future__ import annotations

import libcst as cst

from .analysis.generators import generator_iterator
from .module_epochs import Passes, drawn_how, drawn_passes, plan_drawn_passes
from .rule import Context
from .syntax import dotted, iterated_by


def drawn(ctx: Context, batch_loop: cst.CSTNode) -> tuple[cst.FunctionDef, str, Passes | str] | None:
    """The function that makes the iterator `batch_loop` draws from, the loader it is made of, and its
    passes (or why they cannot be counted); None when the iterator is made once (a single pass needs
    no epoch), or where the passes are counted already."""
    facts = ctx.facts
    made = facts.data.iterator_of(batch_loop) or generator_iterator(facts.index, facts.names, batch_loop)
    func = facts.index.enclosing(made, cst.FunctionDef) if made is not None else None
    over = iterated_by(made) if made is not None else None
    reach = dotted(over) if over is not None else None
    if not isinstance(func, cst.FunctionDef) or reach is None or (id(func), reach) in ctx.plan.counted:
        return None
    passes = drawn_passes(facts.index, func, reach)
    if passes is None:
        return None
    ctx.plan.counted.add((id(func), reach))
    return func, reach, passes


def count_passes(ctx: Context, batch_loop: cst.CSTNode) -> None:
    """Set the epoch of each pass, where the passes can be counted (DDP201, with the sampler it adds)."""
    found = drawn(ctx, batch_loop)
    if found is not None and not isinstance(found[2], str):
        plan_drawn_passes(ctx, found[1], *found[2])


def report_passes(ctx: Context, batch_loop: cst.CSTNode, site: cst.CSTNode, called: set) -> None:
    """DDP204 on a sampler of the script's own whose passes never set its epoch."""
    found = drawn(ctx, batch_loop)
    if found is None or f"{found[1]}.sampler" in called:
        return
    func, reach, passes = found
    head = "DistributedSampler never gets set_epoch(epoch)"
    if isinstance(passes, str):
        ctx.report(site, f"{head}: {drawn_how(func, reach, passes)}", fix="none")
    elif ctx.report(
        site,
        f"{head}: {func.name.value}() draws its batches with next() from iter({reach}), made again when it runs "
        "out; each pass over the loader is an epoch",
    ):
        plan_drawn_passes(ctx, reach, *passes)


__all__ = ["count_passes", "report_passes"]
