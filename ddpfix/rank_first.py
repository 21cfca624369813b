"""One rank first, the others after it: a pair of barriers around statements that must run on one
rank before the others reach them (DDP208's downloads on local rank 0, DDP421's cache built and
saved on rank 0), and the tests for a script that already orders its ranks that way."""

from __future__ import annotations

import libcst as cst

from .order import Order
from .syntax import dotted


def in_first_context(facts, node: cst.CSTNode) -> bool:
    """Inside `with torch_distributed_zero_first(rank):` or `with accelerator.main_process_first():`."""
    for anc in facts.index.ancestors(node):
        if isinstance(anc, cst.With):
            for item in anc.items:
                value = item.item.func if isinstance(item.item, cst.Call) else item.item
                if (dotted(value) or "").rsplit(".", 1)[-1].endswith("_first"):
                    return True
    return False


def after_barrier(facts, stmt: cst.BaseStatement) -> bool:
    """The first half of "main process first" precedes `stmt`: the nearest earlier statement of its
    block that issues a collective is a barrier only the ranks other than 0 wait at."""
    block = facts.index.parent.get(stmt)
    body = list(getattr(block, "body", ()))
    idx = next((i for i, s in enumerate(body) if s is stmt), 0)
    for prev in reversed(body[:idx]):
        ops = facts.ranks.collectives_in(prev)
        if not ops:
            continue
        if isinstance(prev, cst.If) and all(op.endswith("barrier") for _, op in ops):
            rank0_waits, _ = facts.ranks.takes(prev.test)
            return rank0_waits is False
        return False
    return False


def rank_first(ctx, first: cst.BaseStatement, last: cst.BaseStatement, others: str, one: str, what: str) -> None:
    """Barriers around `first`..`last`: the ranks where `others` holds wait before them while the rank
    where `one` holds runs them (`what` it does, for the comment), then joins the barrier after them."""
    plan = ctx.plan
    dist = plan.ref("torch.distributed", "dist", style="import")
    distributed = ctx.env("DISTRIBUTED")
    wait = plan.statements(
        f"if {{D}} and {others}:\n    {{dist}}.barrier()  # the other ranks wait while {what}\n",
        D=distributed,
        dist=dist,
    )
    release = plan.statements(f"if {{D}} and {one}:\n    {{dist}}.barrier()", D=distributed, dist=dist)
    plan.insert_before(first, wait, order=Order.DOWNLOAD)
    plan.insert_after(last, release, order=Order.DOWNLOAD)
