"""Batches drawn by hand from a loader's iterator: `it = iter(loader)`, then `next(it)` in a loop of
the same function, or in a method of the loader's own class that a loop calls through an instance
(`self.batches = iter(self.loader)` and `def next(self): return next(self.batches)`, then
`batch = stream.next()` in the training loop, with `stream = Stream(dataset)`)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from ..syntax import assign_targets, assigned_value, calls_in, drawn_from, iterated_by
from .index import TreeIndex
from .names import Names
from .own_instances import instance_of
from .values import handle_of


def iterator_calls(index: TreeIndex) -> Iterator[tuple[cst.Call, str]]:
    """Every `it = iter(x)` (or `it = x.__iter__()`), with the name it binds."""
    for call in index.calls:
        if iterated_by(call) is None:
            continue
        stmt = index.site(call).stmt
        targets = assign_targets(stmt)
        if assigned_value(stmt) is call and len(targets) == 1:
            yield call, targets[0]


def drawing_loops(index: TreeIndex, names: Names, iter_call: cst.Call, it: str) -> Iterator[cst.CSTNode]:
    """Loops that take `next(it)` of the iterator `iter_call` makes: in its own scope (not around the
    `iter` call itself), or by calling a method of its class that does, through an instance."""
    scope = index.scope_of(iter_call)
    for loop in index.loops:
        if index.scope_of(loop) is scope and not index.contains(loop, iter_call) and _draws(loop.body, it):
            yield loop
    cls = index.enclosing(iter_call, cst.ClassDef)
    if not it.startswith("self.") or not isinstance(cls, cst.ClassDef):
        return
    drawing = {name for name, method in index.methods_of(cls).items() if _draws(method.body, it)}
    for call in index.calls:
        func = call.func
        if not (
            isinstance(func, cst.Attribute) and func.attr.value in drawing and instance_of(index, names, call, cls)
        ):
            continue
        loop = next((a for a in index.ancestors(call) if isinstance(a, (cst.For, cst.While))), None)
        if loop is not None and not index.contains(cls, loop):
            yield loop


def _draws(node: cst.CSTNode, it: str) -> bool:
    return any((drawn := drawn_from(c)) is not None and handle_of(drawn) == it for c in calls_in(node))


__all__ = ["drawing_loops", "iterator_calls"]
