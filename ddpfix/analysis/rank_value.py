"""The values of the rank evaluator (rankvalues.py): what an expression is worth on rank 0 and on the
other ranks, and how truth values combine when a side may be unknown."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import libcst as cst

RANK, BOOL, CONST, SAME, VARIES = "rank", "bool", "const", "same", "varies"
NODE = "node"  # the rank of the machine (`args.nr`, `node_rank`): 0 on rank 0, and on the others of its node

OTHER_RANKS = (1, 2, 3, 4, 7, 8, 15, 16, 1000)  # what a rank > 0 may be, to evaluate a comparison


COMPARISONS = {
    cst.Equal: operator.eq,
    cst.NotEqual: operator.ne,
    cst.LessThan: operator.lt,
    cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt,
    cst.GreaterThanEqual: operator.ge,
    cst.Is: operator.eq,
    cst.IsNot: operator.ne,
    cst.In: lambda a, b: a in b,
    cst.NotIn: lambda a, b: a not in b,
}


@dataclass(frozen=True)
class Value:
    kind: str
    zero: Any = None  # BOOL: rank 0's truth; CONST: the literal
    other: Any = None  # BOOL: the other ranks' truth

    @property
    def varies(self) -> bool:
        """May this value differ between rank 0 and the others?"""
        if self.kind in (RANK, NODE, VARIES):
            return True
        return self.kind == BOOL and (self.zero is None or self.other is None or self.zero != self.other)

    def truth(self) -> tuple[bool | None, bool | None, bool]:
        """(rank 0's truth, the others' truth, may they differ)."""
        if self.kind == RANK:
            return False, True, True
        if self.kind == NODE:
            return False, None, True
        if self.kind == BOOL:
            return self.zero, self.other, self.varies
        if self.kind == CONST:
            try:
                t = bool(self.zero)
            except Exception:
                return None, None, False
            return t, t, False
        return None, None, self.kind == VARIES


SAME_VALUE = Value(SAME)
VARIES_VALUE = Value(VARIES)
RANK_VALUE = Value(RANK)
NODE_VALUE = Value(NODE)
RANK0_TEST = Value(BOOL, True, False)


def boolean(zero: bool | None, other: bool | None, varies: bool) -> Value:
    if zero is None and other is None:
        return VARIES_VALUE if varies else SAME_VALUE
    return Value(BOOL, zero, other)


def sampled(fn, others_of=OTHER_RANKS) -> Value:
    """`fn` of rank 0's value and of the others' (`others_of`: what they may be)."""
    try:
        zero = bool(fn(0))
        others = {bool(fn(k)) for k in others_of}
    except Exception:
        return VARIES_VALUE
    return Value(BOOL, zero, others.pop() if len(others) == 1 else None)


def apply_op(op, a, b):
    if a is None:
        return None
    try:
        return bool(op(a, b))
    except Exception:
        return None


def and_(a, b):
    if a is False or b is False:
        return False
    if a is True and b is True:
        return True
    return None


def or_(a, b):
    if a is True or b is True:
        return True
    if a is False and b is False:
        return False
    return None


__all__ = [
    "BOOL",
    "COMPARISONS",
    "CONST",
    "NODE",
    "NODE_VALUE",
    "OTHER_RANKS",
    "RANK",
    "RANK0_TEST",
    "RANK_VALUE",
    "SAME",
    "SAME_VALUE",
    "VARIES",
    "VARIES_VALUE",
    "Value",
    "and_",
    "apply_op",
    "boolean",
    "or_",
    "sampled",
]
