"""A function a fix adds to the script at module level (`reduce_over_ranks`, `broadcast_after_first_forward`):
once, before the top-level statement that holds its first use, two blank lines around it."""

from __future__ import annotations

import libcst as cst

from .order import Order


def add_module_function(ctx, used_at: cst.CSTNode, code: str, order: Order) -> None:
    """Insert the function `code` (already formatted) above the top-level statement holding `used_at`."""
    plan = ctx.plan
    stmts = plan.statements(code.strip("\n"))
    stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
    body = list(ctx.facts.module.body)
    top = body.index(_top_level(ctx.facts.index, used_at))
    if top > 0 and body[top].leading_lines:  # the blank lines and comments above it stay with it
        plan.insert_after(body[top - 1], stmts, order)
    else:
        plan.insert_before(body[top], stmts, order, blank_after=True)


def _top_level(index, node: cst.CSTNode) -> cst.CSTNode:
    top = node
    for anc in index.ancestors(node):
        if isinstance(anc, cst.Module):
            break
        top = anc
    return top


__all__ = ["add_module_function"]
