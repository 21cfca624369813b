"""Batches a generator of the script hands on: a loop in `def sample_data(...)` that draws from a
DataLoader and `yield`s what it draws, consumed by a loop elsewhere (`for batch in sample_data(...)`,
or `it = iter(sample_data(...))` / `it = sample_data(...)`, then `next(it)` in a loop). The loop that
trains is the consumer's; the loader is still the generator's."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..syntax import assign_targets, assigned_value, dotted, walk
from .index import TreeIndex
from .iterators import drawing_loops
from .names import Names


def yielding_function(index: TreeIndex, loop: cst.CSTNode) -> cst.FunctionDef | None:
    """The generator function whose body `loop` is in, when `loop` itself yields (not a nested def)."""
    func = index.enclosing(loop, cst.FunctionDef)
    if not isinstance(func, cst.FunctionDef):
        return None
    for node in walk(loop):
        if isinstance(node, cst.Yield) and index.enclosing(node, cst.FunctionDef) is func:
            return func
    return None


def consuming_loops(index: TreeIndex, names: Names, func: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """The loops that take the items of generator `func`: iterating a call of it (also inside
    `enumerate(...)`, `tqdm(...)`), or drawing `next(it)` from an iterator bound to a call of it."""
    for call in index.callers_of(func):
        for anc in index.ancestors(call):
            if isinstance(anc, cst.For) and index.contains(anc.iter, call):
                yield anc
                break
            if isinstance(anc, (cst.BaseStatement, cst.BaseSmallStatement)):
                break
        stmt = index.site(call).stmt
        value = assigned_value(stmt)
        targets = assign_targets(stmt)
        if len(targets) != 1 or value is None:
            continue
        if value is call or (
            isinstance(value, cst.Call) and dotted(value.func) == "iter" and value.args and value.args[0].value is call
        ):
            yield from drawing_loops(index, names, value, targets[0])


__all__ = ["consuming_loops", "yielding_function"]
