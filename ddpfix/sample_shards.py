"""DDP209's fix for batches a method of the script's own code takes from the tensors it is handed
(analysis/foreign_streams.py, analysis/method_samples.py): each rank its own samples of them, as
many on every rank, cut right before the loop that trains on them:

    def train(data, X, Y, model, criterion, optim, batch_size):
        if DISTRIBUTED:  # each rank its own samples, as many on every rank: the ranks take the same steps
            X = X[RANK::WORLD_SIZE][: len(X) // WORLD_SIZE]
            Y = Y[RANK::WORLD_SIZE][: len(Y) // WORLD_SIZE]
        for X, Y in data.get_batches(X, Y, batch_size, True):

A plain run (WORLD_SIZE 1) skips the cut and takes every sample as before."""

from __future__ import annotations

from .analysis.foreign_streams import UnknownStream
from .rule import Context, Order


def shard_samples(ctx: Context, found: UnknownStream, spawned: str | None) -> None:
    """Report the batches `found` and, where it names what to cut, cut it by rank before the loop
    (`spawned`: the ranks come from mp.spawn, and what to do then)."""
    if found.cut is None or spawned is not None:
        message = found.message if spawned is None else f"{found.message}; {spawned}"
        ctx.report(found.node, message, fix="none")
        return
    names = ", ".join(found.cut)
    if not ctx.report(
        found.node,
        f"training batches come from {found.what}: not a DataLoader, so {found.same}; each rank takes its own "
        f"samples of {names} before the loop, as many on every rank",
    ):
        return
    rank, world = ctx.env("RANK"), ctx.env("WORLD_SIZE")
    lines = "\n".join(f"    {n} = {n}[{rank}::{world}][: len({n}) // {world}]" for n in found.cut)
    stmts = ctx.plan.statements(
        "if {D}:  # each rank its own samples, as many on every rank: the ranks take the same steps\n" + lines,
        D=ctx.env("DISTRIBUTED"),
    )
    ctx.plan.insert_before(found.loop, stmts, order=Order.SAMPLER)


__all__ = ["shard_samples"]
