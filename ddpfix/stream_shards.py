"""DDP209's fix for windows cut from one stream (analysis/stream_windows.py): each rank its own stretch
of the stream, all as long, right where the stream is bound:

    train_data = batchify(corpus.train, args.batch_size)
    if DISTRIBUTED:  # each rank its own stretch of the stream, all as long: the ranks take the same steps
        stretch = len(train_data) // WORLD_SIZE
        train_data = train_data[RANK * stretch : (RANK + 1) * stretch]

Reported without it where the ranks could not take as many windows (their lengths drawn with nothing
seeded) or the stream has no one binding to cut it at."""

from __future__ import annotations

from .analysis.stream_windows import StreamWindows
from .rule import Context, Order
from .syntax import code_of


def shard_stream(ctx: Context, found: StreamWindows, spawned: str | None) -> None:
    """Report the windows `found` and cut the stream by rank, or say why not (`spawned`: the ranks come
    from mp.spawn, and what to do then)."""
    data = found.data
    what = f"training windows cut by {code_of(found.call.func)}() from {data}: every rank trains on the same windows"
    if spawned is not None:
        ctx.report(found.call, f"{what}; {spawned}", fix="none")
    elif found.unseeded is not None:
        ctx.report(
            found.call,
            f"{what}; their lengths come from {found.unseeded}() with no seed, so the ranks would take different "
            f"numbers of steps: seed it alike on every rank, then give each rank its own stretch of {data}, as long "
            "on every rank",
            fix="none",
        )
    elif found.binding is None:
        ctx.report(
            found.call,
            f"{what}; give each rank its own stretch of {data} where it is built, as long on every rank ({data} "
            f"{found.unbound})",
            fix="none",
        )
    elif ctx.report(
        found.call, f"{what}; each rank takes its own stretch of {data}, all as long, so the ranks take the same steps"
    ):
        stmts = ctx.plan.statements(
            """
            if {D}:  # each rank its own stretch of the stream, all as long: the ranks take the same steps
                {s} = len({d}) // {W}
                {d} = {d}[{R} * {s} : ({R} + 1) * {s}]
            """,
            D=ctx.env("DISTRIBUTED"),
            W=ctx.env("WORLD_SIZE"),
            R=ctx.env("RANK"),
            s=ctx.plan.fresh("stretch"),
            d=data,
        )
        ctx.plan.insert_after(found.binding.stmt, stmts, order=Order.SAMPLER)


__all__ = ["shard_stream"]
