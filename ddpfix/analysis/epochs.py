"""Epoch loops written as `while`: the counter a loop steps once per time round."""

from __future__ import annotations

import libcst as cst

from ..syntax import single_small

COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.NotEqual)


def epoch_counter(loop: cst.While) -> str | None:
    """`epoch` for `while epoch < n:` (also `<=`, `!=`) whose body steps it by one at its own level
    (`epoch += 1` or `epoch = epoch + 1`, not inside a nested block): the loop's epoch number."""
    test = loop.test
    if not (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, COMPARISONS)
    ):
        return None
    name = test.left.value
    body = loop.body.body if isinstance(loop.body, cst.IndentedBlock) else ()
    return name if any(_steps(single_small(stmt), name) for stmt in body) else None


def _steps(small: cst.CSTNode | None, name: str) -> bool:
    if isinstance(small, cst.AugAssign):
        return (
            isinstance(small.target, cst.Name)
            and small.target.value == name
            and isinstance(small.operator, cst.AddAssign)
            and _one(small.value)
        )
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
        return (
            isinstance(target, cst.Name)
            and target.value == name
            and isinstance(value, cst.BinaryOperation)
            and isinstance(value.operator, cst.Add)
            and isinstance(value.left, cst.Name)
            and value.left.value == name
            and _one(value.right)
        )
    return False


def _one(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Integer) and node.evaluated_value == 1


__all__ = ["epoch_counter"]
