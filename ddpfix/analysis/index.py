"""The tree index: one pass over a module recording parents, source order and the node kinds the
rules ask about, and navigation over it (ancestors, the statement holding a node, its scope, which
function of this file a call reaches and who calls a function)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from ..positions import StatementPositions, module_positions
from ..syntax import child_nodes, dotted, index_module, is_statement
from .node_memo import NodeMemo

Block = cst.Module | cst.IndentedBlock
Scope = cst.Module | cst.FunctionDef


@dataclass(eq=False)
class Site:
    """A node together with where it sits: its statement, the block holding that, and its scope."""

    node: cst.CSTNode
    stmt: cst.BaseStatement
    block: Block
    func: cst.FunctionDef | None
    cls: cst.ClassDef | None


_LEAVE = object()
_KINDS: dict[type | tuple, dict[type, bool]] = {}  # kind -> node type -> isinstance
_NOWHERE = CodeRange(CodePosition(1, 0), CodePosition(1, 0))


class _Parents(Mapping):
    """node -> its parent, read from the index's map keyed by `id` (see `TreeIndex._up`)."""

    __slots__ = ("_up", "_nodes")

    def __init__(self, up: dict[int, cst.CSTNode], nodes: list[cst.CSTNode]) -> None:
        self._up, self._nodes = up, nodes

    def get(self, node, default=None):  # type: ignore[override]
        return self._up.get(id(node), default)

    def __getitem__(self, node: cst.CSTNode) -> cst.CSTNode:
        try:
            return self._up[id(node)]
        except KeyError:
            raise KeyError(node) from None

    def __contains__(self, node: object) -> bool:
        return id(node) in self._up

    def __iter__(self) -> Iterator[cst.CSTNode]:
        up = self._up
        return (n for n in self._nodes if id(n) in up)

    def __len__(self) -> int:
        return len(self._up)


class TreeIndex:
    """Parents, source order, the nodes of each kind the rules read, and navigation."""

    def __init__(
        self, module: cst.Module, text: str | None = None, tree: ast.Module | None = None, *, placed: bool = True
    ) -> None:
        """`text`, the source `module` was parsed from, and `tree`, Python's parse of it, make reported
        positions cheaper to find (see positions.py); both are optional. Without `placed` (an analysis
        whose findings nobody reads) every node is at 1:0 and no position is computed."""
        self.module = module
        self.placed = placed
        self._text, self._tree = text, tree
        self._ast: ast.Module | None = None  # made by `ast_tree` when no tree was given
        # id(node) -> its parent: keyed without LibCST's hash, which is Python code (every node of the
        # tree is alive as long as the index, so no other object can have a tree node's id meanwhile)
        self._up: dict[int, cst.CSTNode] = {}
        self._nodes: list[cst.CSTNode] = []  # pre-order
        self.parent: Mapping[cst.CSTNode, cst.CSTNode] = _Parents(self._up, self._nodes)
        self.calls: list[cst.Call] = []
        self.loops: list[cst.For | cst.While] = []
        self.funcs: list[cst.FunctionDef] = []
        self.classes: list[cst.ClassDef] = []
        self.ifs: list[cst.If] = []
        self.strings: list[cst.SimpleString] = []
        self.assigns: list[cst.Assign] = []
        self.imports: list[cst.Import | cst.ImportFrom] = []
        self.globals: list[cst.Global] = []  # `global x` statements
        self.identifiers: set[str] = set()  # every Name's text: what a new name must not be
        self._spans: dict[int, list[int]] = {}  # id(node) -> [start, end) in `_nodes`
        self._positions: StatementPositions | None = None
        # id(call) -> (call, the function of this file it invokes): the most asked question of all, kept
        # inline rather than in a NodeMemo (each lookup through one costs a Python call more)
        self._callees: dict[int, tuple[cst.Call, cst.FunctionDef | None]] = {}
        self._methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}
        self._sites = NodeMemo()  # rules ask where the same nodes sit several times over
        self._enclosing = NodeMemo()
        self._collect()
        index_module(self._nodes, self._spans)

    def _collect(self) -> None:
        kinds = {
            cst.Call: self.calls,
            cst.For: self.loops,
            cst.While: self.loops,
            cst.FunctionDef: self.funcs,
            cst.ClassDef: self.classes,
            cst.If: self.ifs,
            cst.SimpleString: self.strings,
            cst.Assign: self.assigns,
            cst.Import: self.imports,
            cst.ImportFrom: self.imports,
            cst.Global: self.globals,
        }
        nodes, spans, identifiers = self._nodes, self._spans, self.identifiers
        up_of = self._up
        name_type = cst.Name
        stack: list = [(self.module, None)]
        pop, push = stack.pop, stack.append
        while stack:
            node, up = pop()
            if up is _LEAVE:
                spans[id(node)][1] = len(nodes)
                continue
            if up is not None:
                up_of[id(node)] = up
            at = len(nodes)
            nodes.append(node)
            kind = kinds.get(type(node))
            if kind is not None:
                kind.append(node)
            elif type(node) is name_type:
                identifiers.add(node.value)  # type: ignore[attr-defined]
            children = child_nodes(node)
            if not children:  # a leaf: its span ends right after it
                spans[id(node)] = [at, at + 1]
                continue
            spans[id(node)] = [at, 0]
            push((node, _LEAVE))
            for child in reversed(children):
                push((child, node))

    @property
    def source(self) -> str | None:
        """The text the module was parsed from, when it was given."""
        return self._text

    @property
    def ast_tree(self) -> ast.Module:
        """Python's parse of the module: the one it was given, or made once when first asked."""
        if self._tree is not None:
            return self._tree
        if self._ast is None:
            text = self._text if self._text is not None else self.module.code
            try:
                self._ast = ast.parse(text.removeprefix("\ufeff"))
            except (SyntaxError, ValueError, RecursionError):  # what LibCST reads and Python does not
                self._ast = ast.Module(body=[], type_ignores=[])
        return self._ast

    # ----------------------------------------------------------------- positions
    def position(self, node: cst.CSTNode) -> CodeRange:
        """1-based line, 0-based column range of `node` (computed once, only when asked)."""
        if not self.placed:
            return _NOWHERE
        if self._positions is None:
            if self._text is None:
                self._positions = module_positions(self.module)
            else:
                self._positions = StatementPositions(self.module, self._text, self.parent, self._tree)
        return self._positions[node]

    # ----------------------------------------------------------------- navigation
    def indexed(self, node: cst.CSTNode) -> bool:
        """Is `node` a node of this module (not one built by a rule)?"""
        span = self._spans.get(id(node))
        return span is not None and self._nodes[span[0]] is node

    def contains(self, scope: cst.CSTNode, node: cst.CSTNode) -> bool:
        """Is `node` inside `scope` (both nodes of this module)?"""
        start, end = self._spans[id(scope)]
        span = self._spans.get(id(node))
        return span is not None and self._nodes[span[0]] is node and start <= span[0] < end

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        up = self._up
        cur = up.get(id(node))
        while cur is not None:
            yield cur
            cur = up.get(id(cur))

    def site(self, node: cst.CSTNode) -> Site:
        """The statement holding `node` (a direct child of a block) and its block/function/class."""
        return self._sites(node, self._site)

    def _site(self, node: cst.CSTNode) -> Site:
        child = node
        stmt = block = None
        func = cls = None
        for anc in self.ancestors(node):
            kind = type(anc)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
            if stmt is None:
                if (kind is cst.Module or kind is cst.IndentedBlock) and is_statement(child):
                    stmt, block = child, anc
            elif kind is cst.FunctionDef:
                if func is None:
                    func = anc
            elif kind is cst.ClassDef and cls is None:
                cls = anc
            child = anc
        if stmt is None:  # node is itself a top-level statement
            stmt, block = node, self.module  # type: ignore[assignment]
        return Site(node, stmt, block, func, cls)  # type: ignore[arg-type]

    def enclosing(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        return self._enclosing(node, self._enclosing_of, kind)

    def _enclosing_of(self, node: cst.CSTNode, kind: type) -> cst.CSTNode | None:
        up = self._up
        memo = _KINDS.get(kind)
        if memo is None:
            memo = _KINDS[kind] = {}
        cur = up.get(id(node))
        while cur is not None:
            hit = memo.get(type(cur))  # isinstance per node type, remembered: the ABC check is slow
            if hit is None:
                hit = memo[type(cur)] = isinstance(cur, kind)
            if hit:
                return cur
            cur = up.get(id(cur))
        return None

    def scope_of(self, node: cst.CSTNode) -> Scope:
        return self.enclosing(node, cst.FunctionDef) or self.module  # type: ignore[return-value]

    def before(self, a: cst.CSTNode, b: cst.CSTNode) -> bool:
        """Does `a` start before `b` in the source?"""
        return self.order(a) < self.order(b)

    def order(self, node: cst.CSTNode) -> int:
        """Where `node` (a node of this module) comes in the source: its pre-order number."""
        return self._spans[id(node)][0]

    def in_one_line_suite(self, node: cst.CSTNode) -> bool:
        """True for statements written on one line after `:` (`if x: y()`), which cannot take a guard."""
        return any(isinstance(a, cst.SimpleStatementSuite) for a in self.ancestors(node))

    def next_statement(self, stmt: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement after `stmt` in its block, if any."""
        block = self.parent.get(stmt)
        body = list(getattr(block, "body", ()))
        idx = next((i for i, s in enumerate(body) if s is stmt), None)
        return body[idx + 1] if idx is not None and idx + 1 < len(body) else None

    # ----------------------------------------------------------------- functions and calls
    @cached_property
    def func_by_name(self) -> dict[str, cst.FunctionDef]:
        """Module-level functions by name (methods are not included)."""
        return {
            f.name.value: f
            for f in self.funcs
            if self.parent.get(self.parent.get(f)) is None or self.parent.get(f) is self.module
        }

    @cached_property
    def declared_global(self) -> dict[str, list[cst.FunctionDef]]:
        """name -> the functions whose body (a nested function's included) declares it `global`, in
        source order."""
        out: dict[str, list[cst.FunctionDef]] = {}
        for node in self.globals:
            for anc in self.ancestors(node):
                if type(anc) is cst.FunctionDef:
                    for g in node.names:
                        funcs = out.setdefault(g.name.value, [])
                        if anc not in funcs:
                            funcs.append(anc)
        for funcs in out.values():
            funcs.sort(key=self.order)
        return out

    def methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        if cls not in self._methods:
            self._methods[cls] = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}  # type: ignore[union-attr]
        return self._methods[cls]

    def callee_of(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function or method of this file that `call` invokes, when that can be told by name."""
        known = self._callees.get(id(call))
        if known is None:
            known = self._callees[id(call)] = (call, self._find_callee(call))  # (keeps the call: its id stays its own)
        return known[1]

    def _find_callee(self, call: cst.Call) -> cst.FunctionDef | None:
        func = call.func
        if type(func) is cst.Name:
            return self._named_function(call, func.value)
        if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
            cls = self.enclosing(call, cst.ClassDef)
            if type(cls) is cst.ClassDef:
                return self.methods_of(cls).get(func.attr.value)
        return None

    def _named_function(self, call: cst.Call, name: str) -> cst.FunctionDef | None:
        """The function `name` called at `call` names: one defined in the functions around the call
        (innermost first), at module level, or in a block at module level (`if __name__ == "__main__":`)."""
        scope = self.scope_of(call)
        while scope is not self.module:
            found = self._scoped_funcs.get((id(scope), name))
            if found is not None:
                return found
            scope = self.scope_of(scope)
        return self.func_by_name.get(name) or self._scoped_funcs.get((id(self.module), name))

    @cached_property
    def _scoped_funcs(self) -> dict[tuple[int, str], cst.FunctionDef | None]:
        """Functions that are no methods, by the scope that binds their name (a function, or the module
        for one in a block at module level); None where that scope defines the name more than once."""
        out: dict[tuple[int, str], cst.FunctionDef | None] = {}
        for f in self.funcs:
            cls, outer = self.enclosing(f, cst.ClassDef), self.enclosing(f, cst.FunctionDef)
            if cls is not None and (outer is None or self.contains(outer, cls)):
                continue  # a method (of a class, or of a class inside a function)
            key = (id(outer or self.module), f.name.value)
            out[key] = None if key in out else f
        return out

    @cached_property
    def _callers(self) -> dict[cst.FunctionDef, list[cst.Call]]:
        out: dict[cst.FunctionDef, list[cst.Call]] = {}
        for call in self.calls:
            callee = self.callee_of(call)
            if callee is not None:
                out.setdefault(callee, []).append(call)
        return out

    def callers_of(self, func: cst.FunctionDef) -> list[cst.Call]:
        """The calls of this file that reach `func` by name, in source order."""
        return self._callers.get(func, [])

    def calls_by_name(self, name: str) -> list[cst.Call]:
        """Calls whose callee is spelled `name` or `<anything>.name` (a method of that name)."""
        return list(self._calls_by_name.get(name, ()))

    @cached_property
    def _calls_by_name(self) -> dict[str, list[cst.Call]]:
        """The calls by the last name of their callee, in source order (built once: a lookup per
        function of a long script would otherwise scan every call each time)."""
        out: dict[str, list[cst.Call]] = {}
        for call in self.calls:
            callee = call.func
            kind = type(callee)
            if kind is cst.Attribute:
                out.setdefault(callee.attr.value, []).append(call)  # type: ignore[attr-defined]
            elif kind is cst.Name:
                out.setdefault(callee.value, []).append(call)  # type: ignore[attr-defined]
        return out

    def statement_calls(self, pred) -> list[cst.Call]:
        """Calls that are whole expression statements (`f(...)` on its own line) and match `pred`."""
        return [c for c in self.calls if type(self.parent.get(c)) is cst.Expr and pred(c)]

    def class_calls(self, cls: cst.ClassDef) -> list[cst.Call]:
        """Calls that construct `cls` by its plain name."""
        return [c for c in self.calls if dotted(c.func) == cls.name.value]


__all__ = ["Block", "Scope", "Site", "TreeIndex"]
