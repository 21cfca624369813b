"""Batches a generator of the script hands on: a loop in `def sample_data(...)` that draws from a
DataLoader and `yield`s what it draws, consumed by a loop elsewhere (`for batch in sample_data(...)`,
or `it = iter(sample_data(...))` / `it = sample_data(...)`, then `next(it)` in a loop). The loop that
trains is the consumer's; the loader is still the generator's."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..syntax import assign_targets, assigned_value, calls_in, dotted, drawn_from, iterated_by, walk
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
        if value is call or (isinstance(value, cst.Call) and iterated_by(value) is call):
            yield from drawing_loops(index, names, value, targets[0])


def generator_iterator(index: TreeIndex, names: Names, loop: cst.CSTNode) -> cst.Call | None:
    """The `iter(p)` (or `p.__iter__()`) a generator function of this file makes of its parameter `p`,
    when `loop` draws its batches with next() from a call of that generator (`data_gen =
    inf_generator(train_loader)`, then `next(data_gen)` or `data_gen.__next__()` in the loop)."""
    scope = index.scope_of(loop)
    for call in calls_in(getattr(loop, "body", loop)):
        drawn = drawn_from(call)
        name = dotted(drawn) if drawn is not None else None
        value = names.value_before(scope, name, loop) if name is not None else None
        func = index.callee_of(value) if isinstance(value, cst.Call) else None
        if func is None or not any(isinstance(n, cst.Yield) for n in walk(func.body)):
            continue
        params = {p.name.value for p in func.params.params}
        for made in calls_in(func.body):
            over = iterated_by(made)
            if over is not None and dotted(over) in params:
                return made
    return None


__all__ = ["consuming_loops", "generator_iterator", "yielding_function"]
