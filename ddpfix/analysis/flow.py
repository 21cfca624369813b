"""Flow: which names a statement binds and reads, and when module-level execution first reaches a
node. Where a rule inserts or moves code, these decide what may go where: never above the binding
of a name it reads, and before the first statement that needs what it sets up.

Module-level execution is the file's top-level statements in order. Code in a function runs when
something at module level calls it (or hands it on: `fire.Fire(main)`, `mp.spawn(worker, ...)`),
so a node's *run position* is the index of the first top-level statement that may reach it, or the
number of statements when nothing at module level does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property

import libcst as cst

from ..syntax import child_nodes, dotted, walk
from .index import TreeIndex

# --------------------------------------------------------------------------- bindings and reads
_OWN_SCOPE = frozenset({cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp})


def binds(stmt: cst.CSTNode) -> set[str]:
    """The (dotted) names a statement binds or changes in its own scope: assignment targets
    (`x`, `args.rank`, the `d` of `d[k] = v`), loop and `with` targets, imports, `def`/`class` names,
    walrus targets; inside nested blocks too, but not inside nested functions or classes."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [stmt]
    while stack:
        node = stack.pop()
        kind = type(node)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
        if kind is cst.FunctionDef or kind is cst.ClassDef:
            out.add(node.name.value)  # type: ignore[attr-defined]
            continue
        if kind in _OWN_SCOPE:
            continue  # their own scope (a walrus inside one is rare enough to ignore)
        if kind is cst.Assign:
            for t in node.targets:  # type: ignore[attr-defined]
                out.update(_targets(t.target))
        elif kind is cst.AugAssign or kind is cst.AnnAssign:
            if kind is not cst.AnnAssign or node.value is not None:  # type: ignore[attr-defined]
                out.update(_targets(node.target))  # type: ignore[attr-defined]
        elif kind is cst.For or kind is cst.NamedExpr or kind is cst.Del:
            out.update(_targets(node.target))  # type: ignore[attr-defined]
        elif kind is cst.AsName:
            out.update(_targets(node.name))  # type: ignore[attr-defined]  # with ... as x, except E as x, import a as b
        elif kind is cst.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.asname is None:
                    out.add((dotted(alias.name) or "").split(".")[0])
        elif kind is cst.ImportFrom:
            if isinstance(node.names, cst.ImportStar):  # type: ignore[attr-defined]
                out.add("*")
            else:
                for alias in node.names:
                    if alias.asname is None:
                        out.add(dotted(alias.name) or "")
        stack.extend(child_nodes(node))
    out.discard("")
    return out


def _targets(target: cst.BaseExpression) -> Iterator[str]:
    if isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            yield from _targets(el.value)
    elif isinstance(target, cst.StarredElement):
        yield from _targets(target.value)
    elif isinstance(target, cst.Subscript):
        yield from _targets(target.value)  # `d[k] = v` changes d
    else:
        d = dotted(target)
        if d:
            yield d


def read_names(node: cst.CSTNode) -> set[str]:
    """The plain names `node` reads (`args` for `args.local_rank`): `reads` without the dotted ones."""
    return {r.split(".")[0] for r in _reads(node)}


_BINDERS = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.AsName)


def own_targets(node: cst.CSTNode) -> set[str]:
    """The (dotted) names one binding node binds itself: an assignment's targets, a loop's target (not
    what the statements of its body bind), a walrus's, an `as` name."""
    if type(node) is cst.Assign:
        return {n for t in node.targets for n in _targets(t.target)}
    if type(node) is cst.AsName:
        return set(_targets(node.name))  # type: ignore[arg-type]
    return set(_targets(node.target))  # type: ignore[attr-defined]


def last_binding(index, scope: cst.CSTNode, name: str, before: cst.CSTNode, kinds: tuple = _BINDERS):
    """The node of `scope` (not of a function inside it), of one of `kinds`, that binds `name` last
    before `before` in the source; None when none does."""
    last, last_order = None, -1
    for node in walk(scope):
        if not isinstance(node, kinds) or not index.before(node, before):
            continue
        if name not in own_targets(node) or index.scope_of(node) is not scope:
            continue
        order = index.order(node)
        if order > last_order:
            last, last_order = node, order
    return last


def reads(node: cst.CSTNode) -> set[str]:
    """The (dotted) names `node` mentions as values: `args.local_rank` gives `args` and
    `args.local_rank`; keyword names and attribute names on their own are not reads."""
    return set(_reads(node))


def _reads(node: cst.CSTNode) -> Iterator[str]:
    stack = [node]
    while stack:
        cur = stack.pop()
        if isinstance(cur, cst.Attribute):
            d = dotted(cur)
            if d:
                yield d
            stack.append(cur.value)
        elif isinstance(cur, cst.Name):
            yield cur.value
        elif isinstance(cur, cst.Arg):
            stack.append(cur.value)
        elif isinstance(cur, (cst.FunctionDef, cst.ClassDef)):
            stack.extend(d.decorator for d in cur.decorators)  # the body reads when it runs, not here
            if isinstance(cur, cst.FunctionDef):
                stack.extend(p.default for p in _params(cur.params) if p.default is not None)
            else:
                stack.extend(a.value for a in cur.bases)
        else:
            stack.extend(child_nodes(cur))


def _params(params: cst.Parameters) -> Iterator[cst.Param]:
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params


def conflicts(bound: Iterable[str], read: Iterable[str]) -> bool:
    """Does binding any of `bound` change what reading any of `read` sees? (`args` and `args.gpu`
    depend on each other both ways.)"""
    read = set(read)
    for b in bound:
        if b == "*":
            return True
        for r in read:
            if r == b or r.startswith(b + ".") or b.startswith(r + "."):
                return True
    return False


# --------------------------------------------------------------------------- run order
class Flow:
    """When module-level execution reaches a node, and which top-level statement binds a name."""

    def __init__(self, index: TreeIndex) -> None:
        self.index = index
        self.body = list(index.module.body)
        self._top = {id(stmt): i for i, stmt in enumerate(self.body)}
        self._runs: dict[tuple, int] = {}

    @cached_property
    def _references(self) -> dict[str, list[cst.Name]]:
        """Name nodes by spelling, outside the `def`/`class` lines that define them and outside
        attribute names (`x.train` does not reference a function `train`)."""
        out: dict[str, list[cst.Name]] = {}
        skip: set[int] = set()
        for node in walk(self.index.module):
            kind = type(node)
            if kind is cst.Name:
                if id(node) not in skip:
                    out.setdefault(node.value, []).append(node)  # type: ignore[attr-defined]
            elif kind is cst.FunctionDef or kind is cst.ClassDef:
                skip.add(id(node.name))  # type: ignore[attr-defined]
            elif kind is cst.Attribute:
                skip.add(id(node.attr))  # type: ignore[attr-defined]
            elif kind is cst.Arg and node.keyword is not None:  # type: ignore[attr-defined]
                skip.add(id(node.keyword))  # type: ignore[attr-defined]
        return out

    def top_index(self, node: cst.CSTNode) -> int:
        """Index in the module body of the top-level statement holding `node`."""
        if id(node) in self._top:
            return self._top[id(node)]
        for anc in self.index.ancestors(node):
            if id(anc) in self._top:
                return self._top[id(anc)]
        return len(self.body)

    def runs_at(self, node: cst.CSTNode, scope: cst.FunctionDef | None = None) -> int:
        """Index of the first statement of `scope`'s body (the module's when None) during whose
        execution `node` may run; the number of those statements when none reaches it."""
        body = self.body if scope is None else list(scope.body.body)  # type: ignore[union-attr]
        return self._runs_at(node, scope, body)

    def _runs_at(self, node: cst.CSTNode, scope, body: list) -> int:
        # The earliest statement over every function `node` is reachable through: a walk with one
        # visited set (the minimum over what is reachable does not depend on the path taken).
        first = self._owner(node)
        if first is not scope and first is not None and (first, scope) in self._runs:
            return self._runs[(first, scope)]
        best = len(body)
        stack, visited = [node], set()
        while stack:
            current = stack.pop()
            owner = self._owner(current)
            if owner is scope:
                best = min(best, self._statement_index(current, scope, body))
                continue
            if owner is None:
                continue  # module-level code: not reached from inside a function
            if (owner, scope) in self._runs:
                best = min(best, self._runs[(owner, scope)])
                continue
            if owner in visited:
                continue
            visited.add(owner)
            stack.extend(self._uses(owner))
        if first is not scope and first is not None:
            self._runs[(first, scope)] = best
        return best

    def _statement_index(self, node: cst.CSTNode, scope, body: list) -> int:
        if scope is None:
            return self.top_index(node)
        ids = {id(s): i for i, s in enumerate(body)}
        for anc in (node, *self.index.ancestors(node)):
            if id(anc) in ids:
                return ids[id(anc)]
        return len(body)

    def _owner(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        """The innermost function (or lambda) whose body holds `node`: its code runs when called."""
        child = node
        for anc in self.index.ancestors(node):
            if isinstance(anc, cst.FunctionDef) and child is anc.body:
                return anc
            if isinstance(anc, cst.Lambda) and child is anc.body:
                return None  # a lambda may run where it is written (`sorted(key=lambda ...)`)
            child = anc
        return None

    def _uses(self, func: cst.CSTNode) -> list[cst.CSTNode]:
        """Where `func` may be called from: the calls of this file that reach it, the places that
        name it (a callback), and for a method, where its class is named or the method is called by
        attribute."""
        assert isinstance(func, cst.FunctionDef)
        out: list[cst.CSTNode] = list(self.index.callers_of(func))
        name = func.name.value
        cls = self.index.enclosing(func, cst.ClassDef)
        if isinstance(cls, cst.ClassDef) and self.index.parent.get(func) is cls.body:
            out.extend(r for r in self._references.get(cls.name.value, ()) if not self.index.contains(cls, r))
            out.extend(self.index.calls_by_name(name))
        else:
            out.extend(r for r in self._references.get(name, ()) if not self.index.contains(func, r))
        return out

    def only_within(self, node: cst.CSTNode, container: cst.CSTNode, _depth: int = 0) -> bool:
        """Does `node` run only while `container` runs: it is inside it, or in a function that is
        used only from inside it?"""
        if self.index.contains(container, node):
            return True
        owner = self._owner(node)
        if owner is None or _depth > 6:
            return False
        uses = self._uses(owner)
        return bool(uses) and all(self.only_within(u, container, _depth + 1) for u in uses)

    def first_binding(self, names: Iterable[str]) -> int | None:
        """Index of the first top-level statement that binds one of `names`."""
        wanted = set(names)
        for i, stmt in enumerate(self.body):
            if binds(stmt) & wanted:
                return i
        return None


__all__ = ["Flow", "binds", "conflicts", "last_binding", "own_targets", "read_names", "reads"]
