"""The names a statement reads and binds, and a scope's statements in execution order, over LibCST.

Attribute chains count as names of their own (`self.model` is read by `self.model.parameters()`
and bound by `self.model = ...`), so moving a statement across `self.model = DDP(self.model)` is
seen like moving it across `model = DDP(model)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from ..syntax import child_nodes, dotted

Scope = cst.Module | cst.FunctionDef | cst.ClassDef
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass
class Names:
    reads: set[str] = field(default_factory=set)
    binds: set[str] = field(default_factory=set)


# ------------------------------------------------------------------------------ expressions
def _chain(node: cst.BaseExpression) -> list[str]:
    """`a.b.c` -> ["a", "a.b", "a.b.c"]; the prefixes of the longest Name/Attribute chain at `node`."""
    d = dotted(node)
    if d is None:
        return []
    parts = d.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def reads_of(node: cst.CSTNode | None, out: set[str], walrus: set[str] | None = None) -> set[str]:
    """Every name and attribute chain `node` (an expression or a part of one) reads; what its
    assignment expressions (`:=`) bind goes to `walrus`."""
    if node is None:
        return out
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is cst.Name:
            out.add(n.value)
        elif type(n) is cst.Attribute:
            chain = _chain(n)
            if chain:
                out.update(chain)
            else:
                stack.append(n.value)  # `f().x`: what f() reads; `.x` names no variable
        elif type(n) is cst.Arg:
            stack.append(n.value)  # the keyword of `f(x=1)` is not a read
        elif type(n) is cst.Lambda:
            inner = reads_of(n.body, set())
            params = {p.name.value for p in _params(n.params)}
            out.update(r for r in inner if r.split(".")[0] not in params)
            stack.extend(p.default for p in _params(n.params) if p.default is not None)
        elif isinstance(n, _COMPREHENSIONS):
            inner: set[str] = set()
            targets: set[str] = set()
            for part in child_nodes(n):
                if type(part) is cst.CompFor:
                    _comp_for(part, inner, targets)
                else:
                    reads_of(part, inner)
            out.update(r for r in inner if r.split(".")[0] not in targets)
        elif type(n) is cst.NamedExpr:
            if walrus is not None:
                binds_of(n.target, walrus)
            stack.append(n.value)
        else:
            stack.extend(child_nodes(n))
    return out


def _comp_for(node: cst.CompFor, reads: set[str], targets: set[str]) -> None:
    binds_of(node.target, targets)
    reads_of(node.iter, reads)
    for cond in node.ifs:
        reads_of(cond.test, reads)
    if node.inner_for_in is not None:
        _comp_for(node.inner_for_in, reads, targets)


def _params(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params
    for p in (params.star_arg, params.star_kwarg):
        if isinstance(p, cst.Param):
            yield p


def binds_of(target: cst.CSTNode | None, out: set[str]) -> set[str]:
    """What an assignment to `target` binds: names, attribute chains (`self.model`), tuple parts."""
    if target is None:
        return out
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            binds_of(el.value, out)
    elif isinstance(target, cst.StarredElement):
        binds_of(target.value, out)
    elif isinstance(target, (cst.Name, cst.Attribute)):
        d = dotted(target)
        if d is not None:
            out.add(d)
    return out


def _target_reads(target: cst.CSTNode, out: set[str]) -> None:
    """An assignment target reads what leads up to the bound part: `self` of `self.x = 1`, all of
    `a[i]` in `a[i] = 1`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            _target_reads(el.value, out)
    elif isinstance(target, cst.StarredElement):
        _target_reads(target.value, out)
    elif isinstance(target, cst.Attribute):
        chain = _chain(target)
        out.update(chain[:-1] if chain else reads_of(target.value, set()))
    elif isinstance(target, cst.Subscript):
        reads_of(target, out)


# ------------------------------------------------------------------------------ statements
def small_names(small: cst.BaseSmallStatement, names: Names, reads: bool = True) -> None:
    """What a small statement reads and binds (with `reads` False, only what it binds, leaving out
    assignment expressions, which would need a walk of every expression)."""
    r, b = (names.reads, names.binds) if reads else (None, names.binds)

    def read(node: cst.CSTNode | None) -> None:
        if r is not None:
            reads_of(node, r, b)

    if isinstance(small, cst.Assign):
        for t in small.targets:
            binds_of(t.target, b)
            if r is not None:
                _target_reads(t.target, r)
        read(small.value)
    elif isinstance(small, cst.AugAssign):
        binds_of(small.target, b)
        read(small.target)
        read(small.value)
    elif isinstance(small, cst.AnnAssign):
        if small.value is not None:
            binds_of(small.target, b)
            read(small.value)
        if r is not None:
            _target_reads(small.target, r)
    elif isinstance(small, cst.Import):
        for alias in small.names:
            if alias.asname is not None:
                binds_of(alias.asname.name, b)
            else:
                b.add((dotted(alias.name) or "").split(".")[0])
    elif isinstance(small, cst.ImportFrom):
        if not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                binds_of(alias.asname.name if alias.asname is not None else alias.name, b)
    elif isinstance(small, cst.Del):
        binds_of(small.target, b)
    elif isinstance(small, (cst.Global, cst.Nonlocal)):
        b.update(n.name.value for n in small.names)
    else:
        read(small)


def header_names(stmt: cst.BaseStatement, reads: bool = True) -> Names:
    """What a statement reads and binds itself; for a compound statement only its header and a body
    written on the same line (the statements of its indented blocks are units of their own). With
    `reads` False, only what it binds (see `small_names`)."""
    names = Names()
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            small_names(small, names, reads)
        return names
    for part in (stmt, getattr(stmt, "orelse", None), getattr(stmt, "finalbody", None)):
        suite = getattr(part, "body", None)
        if isinstance(suite, cst.SimpleStatementSuite):  # `if x: y = 1`
            for small in suite.body:
                small_names(small, names, reads)

    def read(node: cst.CSTNode | None) -> None:
        if reads:
            reads_of(node, names.reads, names.binds)

    if isinstance(stmt, (cst.If, cst.While)):
        read(stmt.test)
    elif isinstance(stmt, cst.For):
        read(stmt.iter)
        binds_of(stmt.target, names.binds)
        if reads:
            _target_reads(stmt.target, names.reads)
    elif isinstance(stmt, cst.With):
        for item in stmt.items:
            read(item.item)
            if item.asname is not None:
                binds_of(item.asname.name, names.binds)
                if reads:
                    _target_reads(item.asname.name, names.reads)
    elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        names.binds.add(stmt.name.value)
        for dec in stmt.decorators:
            read(dec.decorator)
        if isinstance(stmt, cst.FunctionDef):
            for p in _params(stmt.params):
                read(p.default)
        else:
            for arg in (*stmt.bases, *stmt.keywords):
                read(arg.value)
    elif isinstance(stmt, cst.Match):
        read(stmt.subject)
    return names


def deep_names(stmt: cst.BaseStatement) -> Names:
    """What a statement and every statement of its blocks read and bind (nested scopes: only their
    headers, as running the statement runs no more of them)."""
    total = Names()
    for unit in units_of(stmt):
        n = header_names(unit)
        total.reads |= n.reads
        total.binds |= n.binds
    return total


def units_of(node: cst.CSTNode) -> Iterator[cst.BaseStatement]:
    """`node` (a statement, a block, a module) and the statements of its blocks, in source order,
    not entering nested functions and classes (statements of another scope)."""
    if isinstance(node, cst.BaseStatement):
        yield node
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return
    for block in blocks_of(node):
        for stmt in block:
            yield from units_of(stmt)


def scope_units(scope: Scope) -> Iterator[cst.BaseStatement]:
    """The statements that run in `scope`'s own frame (the module, or a function's or class's body)."""
    body = scope.body.body if isinstance(scope, (cst.FunctionDef, cst.ClassDef)) else scope.body
    for stmt in body:
        if isinstance(stmt, cst.BaseStatement):
            yield from units_of(stmt)


def blocks_of(node: cst.CSTNode) -> Iterator[list[cst.BaseStatement]]:
    """The statement lists of `node`'s indented blocks (an `elif` is a block of one statement)."""
    if isinstance(node, (cst.Module, cst.IndentedBlock)):
        yield list(node.body)
        return
    if not isinstance(node, cst.BaseCompoundStatement):
        return
    parts: list = [node.body]
    for name in ("handlers", "cases"):
        parts.extend(getattr(node, name, ()))
    for name in ("orelse", "finalbody"):
        part = getattr(node, name, None)
        if isinstance(part, cst.If):  # elif
            yield [part]
        elif part is not None:
            parts.append(part)
    for part in parts:
        block = part if isinstance(part, cst.BaseSuite) else getattr(part, "body", None)
        if isinstance(block, cst.IndentedBlock):
            yield list(block.body)


__all__ = [
    "blocks_of",
    "Names",
    "reads_of",
    "binds_of",
    "header_names",
    "deep_names",
    "units_of",
    "scope_units",
    "Scope",
]
