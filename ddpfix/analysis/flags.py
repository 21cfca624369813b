"""Code kept for one kind of run by a flag: the `not FLAG` terms of a test, and whether a call sits
under `if FLAG:` (a DataParallel line kept for the plain run, `if not DISTRIBUTED:`, beside the DDP
wrap under `if DISTRIBUTED:`)."""

from __future__ import annotations

import libcst as cst

from ..syntax import code_of
from .index import TreeIndex


def negated(test: cst.BaseExpression) -> set[str]:
    """The code of `N` in the `not N` terms of `test` (itself, or the terms of an `and` chain):
    `DISTRIBUTED`, `dist.is_initialized()`."""
    terms, out = [test], set()
    while terms:
        term = terms.pop()
        if isinstance(term, cst.BooleanOperation) and isinstance(term.operator, cst.And):
            terms += [term.left, term.right]
        elif isinstance(term, cst.UnaryOperation) and isinstance(term.operator, cst.Not):
            out.add(code_of(term.expression))
    return out


def under_flag(index: TreeIndex, calls: list[cst.Call], flags: set[str]) -> bool:
    """Is one of `calls` in the body of an `if FLAG:` for one of `flags` (by the flag's code)?"""
    if not flags:
        return False
    for call in calls:
        for anc in index.ancestors(call):
            if isinstance(anc, cst.If) and code_of(anc.test) in flags and index.contains(anc.body, call):
                return True
    return False


__all__ = ["negated", "under_flag"]
