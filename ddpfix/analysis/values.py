"""Where a value built in one place ends up bound: `train_loader = DataLoader(...)`, or a DataLoader (or
sampler) a helper of this file returns, alone, in a tuple or in a dict, to the names its callers
unpack it into (`train_loader, val_loader = build_loaders(args)`, `loaders = get_dataloaders(cfg)`
then `loaders["train"]`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..syntax import assigned_value, dotted, single_small, string_value, walk
from .index import TreeIndex

DEPTH = 3  # helpers returning what other helpers return


@dataclass(eq=False)
class Handle:
    """How code names a value after it is built: `target` ("train_loader", "self.loader",
    'loaders["train"]'), bound by the statement `binding`, reached through the helper calls `via`
    (outermost last), the first of them being a call of `factory`."""

    target: str
    binding: cst.BaseStatement
    via: list[cst.Call] = field(default_factory=list)
    factory: cst.FunctionDef | None = None


def handle_of(expr: cst.BaseExpression) -> str | None:
    """`a.b` -> "a.b"; `loaders["train"]` -> 'loaders["train"]'; `pair[0]` -> "pair[0]"; else None."""
    name = dotted(expr)
    if name is not None:
        return name
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
        base = dotted(expr.value)
        key = expr.slice[0].slice.value
        if base is None:
            return None
        if isinstance(key, cst.Integer):
            return f"{base}[{key.evaluated_value}]"
        text = string_value(key)
        return f'{base}["{text}"]' if text is not None and '"' not in text else None
    return None


class Values:
    """Follows built values to the names that hold them."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index

    def handles(self, node: cst.BaseExpression) -> list[Handle]:
        """Where `node` (a call building a loader or sampler) ends up: the names holding it."""
        return self._from(node, [], None, 0)

    def bound(self, node: cst.BaseExpression, path: tuple) -> list[Handle]:
        """Where the part at `path` (tuple indices, dict keys) of what `node` evaluates to ends up."""
        return self._from(node, list(path), None, 0)

    def _from(self, node: cst.CSTNode, path: list, func: cst.FunctionDef | None, depth: int) -> list[Handle]:
        index = self.index
        parent = index.parent.get(node)
        if isinstance(parent, cst.IfExp) and (parent.body is node or parent.orelse is node):
            return self._from(parent, path, func, depth)  # `DistributedSampler(ds) if DISTRIBUTED else None`
        if isinstance(parent, cst.Element) and isinstance(index.parent.get(parent), cst.Tuple):
            tup = index.parent.get(parent)
            i = list(tup.elements).index(parent)  # type: ignore[union-attr]
            return self._from(tup, [i, *path], func, depth)
        if isinstance(parent, cst.DictElement) and parent.value is node and string_value(parent.key) is not None:
            return self._from(index.parent.get(parent), [string_value(parent.key), *path], func, depth)
        if isinstance(parent, cst.Arg) and parent.keyword is not None and not parent.star:
            call = index.parent.get(parent)
            if isinstance(call, cst.Call) and dotted(call.func) == "dict":
                return self._from(call, [parent.keyword.value, *path], func, depth)
            return []
        stmt = index.site(node).stmt
        small = single_small(stmt)
        if isinstance(small, cst.Return) and small.value is node:
            scope = index.scope_of(stmt)
            return self._returned(scope, path, depth) if isinstance(scope, cst.FunctionDef) else []
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and assigned_value(stmt) is node:
            targets = small.targets if isinstance(small, cst.Assign) else [small]
            out = []
            for t in targets:
                out += self._bound(t.target, path, stmt, depth)
            return out
        return []

    def _bound(self, target: cst.BaseExpression, path: list, stmt: cst.BaseStatement, depth: int) -> list[Handle]:
        """`target = <value at path>`: the names holding the value."""
        if path and isinstance(path[0], int) and isinstance(target, (cst.Tuple, cst.List)):
            elements = list(target.elements)
            if path[0] < len(elements) and not any(isinstance(e, cst.StarredElement) for e in elements):
                return self._bound(elements[path[0]].value, path[1:], stmt, depth)
            return []
        name = handle_of(target)
        if name is None:
            return []
        for key in path:
            name = f"{name}[{key}]" if isinstance(key, int) else f'{name}["{key}"]'
        scope = self.index.scope_of(stmt)
        if (
            isinstance(target, cst.Name) and not path
        ):  # a local returned on: `train_loader = ...; return train_loader, ...`
            returned = self._local_returns(target.value, scope, stmt, depth)
            if returned:
                return returned
        out = [Handle(name, stmt)]
        if path:  # `loaders = get_loaders()` then `train_loader = loaders["train"]`
            out += self._picked(target, name, path, scope, stmt, depth)
        return out

    def _picked(
        self,
        target: cst.BaseExpression,
        name: str,
        path: list,
        scope: cst.CSTNode,
        after: cst.BaseStatement,
        depth: int,
    ) -> list[Handle]:
        """The names later statements take the value at `path` into: `train_loader = loaders["train"]`
        (`name` being `loaders["train"]`), or, for a tuple, `train_loader, val_loader = loaders`."""
        base = target.value if isinstance(target, cst.Name) and isinstance(path[0], int) else None
        out = []
        index = self.index
        for node in walk(scope):
            if type(node) is not cst.SimpleStatementLine or not index.before(after, node):
                continue
            small = single_small(node)
            if type(small) is not cst.Assign or len(small.targets) != 1:
                continue
            into, value = small.targets[0].target, small.value
            if handle_of(value) == name:
                taken = handle_of(into)
                if taken is not None:
                    out.append(Handle(taken, node))
            elif (
                base is not None
                and type(value) is cst.Name
                and value.value == base
                and isinstance(into, (cst.Tuple, cst.List))
                and index.scope_of(node) is scope
            ):
                out += self._bound(into, path, node, depth)
        return out

    def _local_returns(self, name: str, scope: cst.CSTNode, after: cst.CSTNode, depth: int) -> list[Handle]:
        if type(scope) is not cst.FunctionDef:
            return []
        out = []
        for node in walk(scope.body):
            if type(node) is cst.Return and node.value is not None and self.index.scope_of(node) is scope:
                for leaf in _leaves(node.value):
                    if type(leaf) is cst.Name and leaf.value == name and self.index.before(after, leaf):
                        out += self._from(leaf, [], scope, depth)
        return out

    def _returned(self, func: cst.FunctionDef, path: list, depth: int) -> list[Handle]:
        """The value at `path` of what `func` returns, followed to its callers."""
        if depth >= DEPTH:
            return []
        out = []
        for call in self.index.callers_of(func):
            for handle in self._from(call, path, None, depth + 1):
                handle.via.insert(0, call)
                handle.factory = func  # the innermost helper: the one that builds the value
                out.append(handle)
        return out


def _leaves(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The values a returned expression is made of: itself, a tuple's elements, a dict's values."""
    if isinstance(expr, cst.Tuple):  # nested tuples too: `return (train_loader, val_loader), weights`
        return [leaf for e in expr.elements for leaf in (_leaves(e.value) if type(e.value) is cst.Tuple else [e.value])]
    if isinstance(expr, cst.Dict):
        return [e.value for e in expr.elements if isinstance(e, cst.DictElement)]
    if isinstance(expr, cst.Call) and dotted(expr.func) == "dict":
        return [a.value for a in expr.args if a.keyword is not None]
    return [expr]


__all__ = ["DEPTH", "Handle", "Values", "handle_of"]
