"""What a dict of keyword arguments holds where it is unpacked (`DataLoader(ds, **train_kwargs)`): the
keys it may have and their values, followed through where the dict is built (a literal, `dict(...)`,
`{**a, **b}`, `a | b`, `.copy()`, `.update(...)`, `d["k"] = v`, `.setdefault`, `.pop`, `del d["k"]`),
including keys set only on some paths (`if use_cuda: train_kwargs.update(cuda_kwargs)`). What cannot be
read (`vars(args)`, a function's result, a parameter) is named, with its line, instead of guessed."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from ..syntax import code_of, dotted, method_name, receiver, string_value, walk
from .index import TreeIndex
from .names import Names

DEPTH = 4  # how many dicts deep `{**a}` / `.update(b)` are followed


@dataclass
class Key:
    values: list[cst.BaseExpression] = field(default_factory=list)  # what it may be set to
    always: bool = True  # present on every path to the unpacking


@dataclass
class Contents:
    """The keys a dict may hold at one point, what could not be read, and the quote its keys use."""

    keys: dict[str, Key] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)  # "vars(args) (line 12)"
    quote: str = '"'

    def has(self, key: str) -> bool:
        return key in self.keys

    def merge_maybe(self, other: Contents) -> None:
        """`other` is added on some paths only."""
        for k, v in other.keys.items():
            mine = self.keys.get(k)
            if mine is None:
                self.keys[k] = Key(list(v.values), always=False)
            else:
                mine.values += v.values
        self.unknown += other.unknown

    def update(self, other: Contents) -> None:
        """`other` is added on every path: its keys override (a key it may lack keeps the old values too)."""
        for k, v in other.keys.items():
            mine = self.keys.get(k)
            if v.always or mine is None:
                self.keys[k] = Key(list(v.values), v.always)
            else:
                mine.values += v.values
        self.unknown += other.unknown

    def drop(self, key: str, always: bool) -> None:
        """`key` is removed (on every path, or on some)."""
        if key in self.keys:
            if always:
                del self.keys[key]
            else:
                self.keys[key].always = False


class Dicts:
    """Reads dicts of keyword arguments in the script's own code."""

    def __init__(self, index: TreeIndex, names: Names) -> None:
        self.index = index
        self.names = names

    def line(self, node: cst.CSTNode) -> int:
        return self.index.position(node).start.line

    def at(self, name: str, where: cst.CSTNode, depth: int = 0) -> Contents:
        """What the dict `name` holds when `where` runs (statements of its scope before it)."""
        scope = self.index.scope_of(where)
        stmts = self._statements(name, scope, where)
        if not stmts and scope is not self.index.module:
            if isinstance(scope, cst.FunctionDef) and name in {p.name.value for p in _params(scope)}:
                return Contents(unknown=[f"{name}, a parameter of {scope.name.value}() (line {self.line(scope)})"])
            stmts = self._statements(name, self.index.module, None)
        if not stmts:
            return Contents(unknown=[f"{name} (not built in this file)"])
        out: Contents | None = None
        for stmt in stmts:
            always = self._unconditional(stmt, where, scope)
            small = stmt.body[0]  # type: ignore[attr-defined]
            if isinstance(small, (cst.Assign, cst.AnnAssign)) and _binds(small, name):
                value = self.value(small.value, stmt, depth)  # type: ignore[arg-type]
                if out is None or always:
                    out = value
                else:
                    out.merge_maybe(value)
                    for key in out.keys.values():
                        key.always = False
                continue
            if out is None:
                out = Contents(unknown=[f"{name} used before it is built (line {self.line(stmt)})"])
            self._mutation(out, small, name, stmt, always, depth)
        return out or Contents(unknown=[name])

    def uses_after(self, name: str, where: cst.CSTNode) -> cst.CSTNode | None:
        """The first mention of `name` in `where`'s scope after the statement holding `where`, if any."""
        scope = self.index.scope_of(where)
        stmt = self.index.site(where).stmt
        for node in walk(scope):
            if isinstance(node, cst.Name) and node.value == name and self.index.scope_of(node) is scope:
                if self.index.before(stmt, node) and not self.index.contains(stmt, node):
                    return node
        return None

    def escapes(self, name: str, where: cst.CSTNode) -> cst.CSTNode | None:
        """A mention of `name` before `where` that could keep or change the dict out of sight (passed to
        a function, bound to another name), if any."""
        scope = self.index.scope_of(where)
        for node in walk(scope):
            if not (isinstance(node, cst.Name) and node.value == name) or self.index.scope_of(node) is not scope:
                continue
            if not self.index.before(node, where):
                continue
            parent = self.index.parent.get(node)
            if isinstance(parent, cst.Arg) and parent.star == "**":
                continue  # f(**d): read
            if isinstance(parent, cst.Arg) and not parent.star:
                call = self.index.parent.get(parent)
                if isinstance(call, cst.Call) and dotted(call.func) in ("print", "len", "str", "repr"):
                    continue
            if isinstance(parent, (cst.Attribute, cst.Subscript, cst.AssignTarget, cst.StarredDictElement)):
                continue  # d.update(...), d["k"], d = ..., {**d}
            return node
        return None

    # ------------------------------------------------------------------ statements
    def _statements(self, name: str, scope: cst.CSTNode, before: cst.CSTNode | None) -> list[cst.SimpleStatementLine]:
        """Statement lines of `scope` (not nested functions) before `before` that bind or change `name`."""
        out = []
        for node in walk(scope):
            if not isinstance(node, cst.SimpleStatementLine) or len(node.body) != 1:
                continue
            if self.index.scope_of(node) is not (scope if isinstance(scope, cst.FunctionDef) else self.index.module):
                continue
            if before is not None and not self.index.before(node, before):
                continue
            if _touches(node.body[0], name):
                out.append(node)
        return out

    def _unconditional(self, stmt: cst.CSTNode, where: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """Does every path to `where` run `stmt`: is every block holding `stmt` also holding `where`?"""
        for anc in self.index.ancestors(stmt):
            if anc is scope:
                return True
            if isinstance(anc, cst.IndentedBlock) and not self.index.contains(anc, where):
                return False
        return True

    def _mutation(self, out: Contents, small, name: str, stmt, always: bool, depth: int) -> None:
        line = self.line(stmt)
        if isinstance(small, cst.Assign):  # d["k"] = v
            target = small.targets[0].target
            key = _subscript_key(target)
            if key is None:
                out.unknown.append(f"{code_of(target)} (line {line})")
                return
            part = Contents(keys={key: Key([small.value])})
            out.update(part) if always else out.merge_maybe(part)
            self._pops_in(
                out, small.value, name, always
            )  # d["sampler"] = DistributedSampler(ds, shuffle=d.pop("shuffle"))
            return
        if isinstance(small, cst.AugAssign):  # d |= other
            part = self.value(small.value, stmt, depth)
            out.update(part) if always else out.merge_maybe(part)
            return
        if isinstance(small, cst.Del):
            for el in small.target.elements if isinstance(small.target, cst.Tuple) else [small.target]:
                target = el.value if isinstance(el, cst.Element) else el
                key = _subscript_key(target)
                if key is not None:
                    out.drop(key, always)
            return
        call = small.value if isinstance(small, cst.Expr) else None
        if not isinstance(call, cst.Call):
            out.unknown.append(f"{name} changed at line {line}")
            return
        method = method_name(call)
        if method == "update":
            part = Contents()
            for arg in call.args:
                if arg.keyword is not None:
                    part.update(Contents(keys={arg.keyword.value: Key([arg.value])}))
                else:
                    part.update(self.value(arg.value, stmt, depth))
            out.update(part) if always else out.merge_maybe(part)
        elif method == "setdefault" and call.args and _key(call.args[0].value) is not None:
            key = _key(call.args[0].value)
            value = call.args[1].value if len(call.args) > 1 else cst.Name("None")
            if key not in out.keys:
                out.merge_maybe(Contents(keys={key: Key([value])})) if not always else out.update(
                    Contents(keys={key: Key([value])})
                )
        elif method == "pop" and call.args and _key(call.args[0].value) is not None:
            out.drop(_key(call.args[0].value), always)  # type: ignore[arg-type]
        elif method in ("get", "keys", "items", "values", "copy"):
            return
        else:
            out.unknown.append(f"{code_of(call)} (line {line})")

    @staticmethod
    def _pops_in(out: Contents, expr: cst.CSTNode, name: str, always: bool) -> None:
        for node in walk(expr):
            if isinstance(node, cst.Call) and method_name(node) == "pop" and dotted(receiver(node)) == name:
                key = _key(node.args[0].value) if node.args else None
                if key is not None:
                    out.drop(key, always)

    # ------------------------------------------------------------------ expressions
    def value(self, expr: cst.BaseExpression, where: cst.CSTNode, depth: int = 0) -> Contents:
        """What the dict expression `expr` holds when evaluated at `where`."""
        line = self.line(where)
        if depth > DEPTH:
            return Contents(unknown=[f"{code_of(expr)} (line {line})"])
        if isinstance(expr, cst.Dict):
            out = Contents()
            for el in expr.elements:
                if isinstance(el, cst.StarredDictElement):
                    out.update(self.value(el.value, where, depth + 1))
                    continue
                key = _key(el.key)
                if key is None:
                    out.unknown.append(f"{code_of(el.key)} (line {line})")
                    continue
                if isinstance(el.key, cst.SimpleString):
                    out.quote = el.key.quote
                out.keys[key] = Key([el.value])
            return out
        if isinstance(expr, cst.Call) and dotted(expr.func) == "dict":
            out = Contents()
            for arg in expr.args:
                if arg.keyword is not None:
                    out.keys[arg.keyword.value] = Key([arg.value])
                else:
                    out.update(self.value(arg.value, where, depth + 1))
            return out
        if isinstance(expr, cst.Call) and (
            method_name(expr) == "copy" and not expr.args or (self.names.call_qual(expr) or "") in COPIES
        ):
            inner = receiver(expr) if method_name(expr) == "copy" and not expr.args else expr.args[0].value
            return self.value(inner, where, depth + 1) if inner is not None else Contents()
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
            out = self.value(expr.left, where, depth + 1)
            out.update(self.value(expr.right, where, depth + 1))
            return out
        if isinstance(expr, cst.IfExp):
            out = self.value(expr.body, where, depth + 1)
            for key in out.keys.values():
                key.always = False
            out.merge_maybe(self.value(expr.orelse, where, depth + 1))
            return out
        if isinstance(expr, cst.Name):
            return self.at(expr.value, where, depth + 1)
        return Contents(unknown=[f"{code_of(expr)} (line {line})"])


COPIES = {"copy.copy", "copy.deepcopy", "dict"}


def _params(func: cst.FunctionDef) -> list[cst.Param]:
    p = func.params
    out = [*p.posonly_params, *p.params, *p.kwonly_params]
    for star in (p.star_arg, p.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star)
    return out


def _subscript_key(node: cst.CSTNode) -> str | None:
    """`d["shuffle"]` -> "shuffle"."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _key(node.slice[0].slice.value)
    return None


def _key(node: cst.CSTNode) -> str | None:
    return string_value(node) if isinstance(node, cst.BaseExpression) else None


def _binds(small: cst.Assign | cst.AnnAssign, name: str) -> bool:
    targets = small.targets if isinstance(small, cst.Assign) else [small]
    return any(isinstance(t.target, cst.Name) and t.target.value == name for t in targets)


def _touches(small: cst.BaseSmallStatement, name: str) -> bool:
    """Does the statement bind `name` or change the dict it names?"""
    if isinstance(small, (cst.Assign, cst.AnnAssign)):
        if isinstance(small, cst.AnnAssign) and small.value is None:
            return False
        targets = small.targets if isinstance(small, cst.Assign) else [small]
        for t in targets:
            target = t.target
            if isinstance(target, cst.Name) and target.value == name:
                return True
            if isinstance(target, cst.Subscript) and dotted(target.value) == name:
                return True
        return False
    if isinstance(small, cst.AugAssign):
        return dotted(small.target) == name
    if isinstance(small, cst.Del):
        return any(isinstance(n, cst.Subscript) and dotted(n.value) == name for n in walk(small.target))
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        recv = receiver(small.value)
        return recv is not None and dotted(recv) == name
    return False


__all__ = ["Contents", "Dicts", "Key"]
