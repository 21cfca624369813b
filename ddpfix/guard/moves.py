"""Data dependencies of the statements a plan moves or inserts, checked on the plan itself.

The plan knows every edit's original anchor, so the new order of a scope's statements is known
without rendering: each statement keeps its place, an insertion sits before or after its anchor (in
`order`, then proposal order), a moved statement takes its insertion's place and its blocks go with
it. Against that order:

- a statement moved up across one that binds a name it reads would read the older value (or none);
- a statement moved down across one that reads a name it binds leaves that reader without its value;
- an inserted statement that reads a name whose bindings in its scope all come after it fails there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from ..analysis import ScriptFacts
from ..plan import Plan
from ..syntax import code_of
from .dataflow import Names, Scope, blocks_of, deep_names, header_names, scope_units

Key = tuple


@dataclass
class Problem:
    rule: str | None  # the rule whose edit breaks a dependency (None: the plan's shared setup)
    reason: str


@dataclass
class _Order:
    """One scope's statements in source order, with where each one's blocks end."""

    units: list[cst.BaseStatement]
    index: dict[int, int]  # id(statement) -> position in `units`
    end: list[int]  # position after the statement's last nested statement
    depth: list[int]
    parent: list[int]  # position of the statement whose block holds it (-1: the scope's own body)
    names: dict[int, Names] = field(default_factory=dict)
    binders: dict[str, list[int]] | None = None

    def header(self, i: int) -> Names:
        if i not in self.names:
            self.names[i] = header_names(self.units[i])
        return self.names[i]

    def binding(self, name: str) -> list[int]:
        """The statements that bind `name` (assignment expressions left out: see `small_names`)."""
        if self.binders is None:
            self.binders = {}
            for i, unit in enumerate(self.units):
                for n in header_names(unit, reads=False).binds:
                    self.binders.setdefault(n, []).append(i)
        return self.binders.get(name, [])


def _order(scope: Scope) -> _Order:
    units: list[cst.BaseStatement] = []
    end: list[int] = []
    depth: list[int] = []
    parent: list[int] = []

    def visit(stmt: cst.BaseStatement, up: int) -> None:
        i = len(units)
        units.append(stmt)
        end.append(0)
        depth.append(depth[up] + 1 if up >= 0 else 0)
        parent.append(up)
        if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):  # another scope's statements
            for block in blocks_of(stmt):
                for inner in block:
                    visit(inner, i)
        end[i] = len(units)

    body = scope.body.body if isinstance(scope, (cst.FunctionDef, cst.ClassDef)) else scope.body
    for stmt in body:
        visit(stmt, -1)
    return _Order(units, {id(u): i for i, u in enumerate(units)}, end, depth, parent)


class MoveCheck:
    """Checks one plan (made over `facts`); `problems()` lists what breaks."""

    def __init__(self, plan: Plan, facts: ScriptFacts) -> None:
        self.plan, self.facts = plan, facts
        self._orders: dict[int, _Order] = {}
        self._params: dict[int, set[str]] = {}
        self._deep: dict[int, Names] = {}

    def deep(self, stmt: cst.BaseStatement) -> Names:
        names = self._deep.get(id(stmt))
        if names is None:
            names = self._deep[id(stmt)] = deep_names(stmt)
        return names

    def problems(self) -> list[Problem]:
        entries = list(self._entries())
        if not entries:
            return []
        out: list[Problem] = []
        moved_keys: dict[int, Key] = {}
        for _scope, key, ins in entries:
            if ins.moved is not None:
                moved_keys[id(ins.moved)] = key
        for scope, key, ins in entries:
            order = self.scope_order(scope)
            if ins.moved is not None:
                out.extend(self._check_move(order, ins, key, moved_keys))
            elif ins.stmts:
                out.extend(self._check_insert(scope, order, ins, key, entries, moved_keys))
        return out

    # ------------------------------------------------------------------ where things go
    def _entries(self) -> Iterator[tuple[Scope, Key, object]]:
        plan = self.plan
        for table, kind in ((plan.before, 0), (plan.after, -1), (plan.prepends, -2)):
            for anchor, inserts in table.items():
                scope = self.scope_of(anchor if kind != -2 else _first(anchor) or anchor)
                if scope is None:
                    continue
                order = self.scope_order(scope)
                for ins in inserts:
                    yield scope, self._key(order, anchor, kind, ins), ins

    def scope_of(self, node: cst.CSTNode) -> Scope | None:
        if isinstance(node, cst.Module):
            return node
        for anc in self.facts.index.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Module)):
                return anc
            if isinstance(anc, cst.Lambda):
                return None
        return None

    def scope_order(self, scope: Scope) -> _Order:
        order = self._orders.get(id(scope))
        if order is None:
            order = self._orders[id(scope)] = _order(scope)
        return order

    def _key(self, order: _Order, anchor: cst.CSTNode, kind: int, ins) -> Key:
        if kind == -2:  # prepend to a block: before everything in it
            first = _first(anchor)
            pos = order.index.get(id(first), len(order.units)) if first is not None else len(order.units)
            return (pos, -2, 0, ins.order, ins.seq)
        i = order.index.get(id(anchor))
        if i is None:
            return (len(order.units), kind, 0, ins.order, ins.seq)
        if kind == 0:
            return (i, 0, 0, ins.order, ins.seq)
        return (order.end[i], -1, -order.depth[i], ins.order, ins.seq)

    def _new_key(self, order: _Order, i: int, moved_keys: dict[int, Key]) -> Key:
        """Where statement `i` of the scope ends up: its own place, or (with its blocks) the place of
        a move that takes it or an enclosing statement."""
        j = i
        while j >= 0:
            key = moved_keys.get(id(order.units[j]))
            if key is not None and order.end[j] > i:
                return (*key, i)
            j = order.parent[j]
        return (i, 1)

    # ------------------------------------------------------------------ the checks
    def _check_move(self, order: _Order, ins, key: Key, moved_keys: dict[int, Key]) -> Iterator[Problem]:
        m = order.index.get(id(ins.moved))
        if m is None:
            return  # moved into another scope: the name analysis of the output sees what that breaks
        mine = self.deep(ins.moved)
        for i in range(len(order.units)):
            if m <= i < order.end[m]:
                continue  # its own blocks move with it
            was_before = i < m
            now_before = self._new_key(order, i, moved_keys) < key
            if was_before == now_before:
                continue
            other = order.header(i)
            if was_before:  # moved up across statement i
                hit = sorted(mine.reads & other.binds)
                what = "up above"
            else:  # moved down across statement i
                hit = sorted(mine.binds & other.reads)
                what = "down below"
            if hit:
                yield Problem(
                    ins.rule,
                    f"moves `{short(ins.moved)}` {what} `{short(order.units[i])}`, "
                    f"which {'binds' if was_before else 'reads'} `{hit[0]}`",
                )

    def _check_insert(self, scope, order: _Order, ins, key: Key, entries, moved_keys) -> Iterator[Problem]:
        # the imports the plan adds go at the top, above the first statement that reads them
        bound_here: set[str] = {spec.local for spec in self.plan.imports}
        params = self._params.get(id(scope))
        if params is None:
            params = self._params[id(scope)] = _parameters(scope)
        for stmt in ins.stmts:
            names = self.deep(stmt)
            for name in sorted(names.reads - bound_here - params):
                if "." in name:
                    continue  # an attribute chain can be set by code this analysis does not see
                places = [self._new_key(order, i, moved_keys) for i in order.binding(name)]
                if not places or any(p < key for p in places):
                    continue
                if any(
                    k < key and name in self._binds(other)
                    for sc, k, other in entries
                    if sc is scope and other is not ins
                ):
                    continue  # another insertion binds it first
                first = order.units[order.binding(name)[0]]
                yield Problem(ins.rule, f"inserts `{short(stmt)}`, which reads `{name}`, above `{short(first)}`")
            bound_here |= names.binds

    def _binds(self, ins) -> set[str]:
        out: set[str] = set()
        for stmt in [ins.moved] if ins.moved is not None else ins.stmts:
            out |= self.deep(stmt).binds
        return out


def _parameters(scope: Scope) -> set[str]:
    if not isinstance(scope, cst.FunctionDef):
        return set()
    out = set()
    p = scope.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        out.add(param.name.value)
    for param in (p.star_arg, p.star_kwarg):
        if isinstance(param, cst.Param):
            out.add(param.name.value)
    for stmt in scope_units(scope):  # `global x` / `nonlocal x`: bound elsewhere
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, (cst.Global, cst.Nonlocal)):
                    out.update(n.name.value for n in small.names)
    return out


def _first(block: cst.CSTNode) -> cst.CSTNode | None:
    body = getattr(block, "body", None)
    if isinstance(block, cst.Module):
        body = block.body
    return body[0] if isinstance(body, (list, tuple)) and body else None


def short(stmt: cst.CSTNode) -> str:
    """The statement's first line, shortened, for a message."""
    try:
        text = code_of(stmt)
    except Exception:  # pragma: no cover - any node renders
        return type(stmt).__name__
    line = next((l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")), "")
    return line if len(line) <= 60 else line[:57] + "..."


__all__ = ["MoveCheck", "Problem", "short"]
