"""Small, pure helpers over LibCST nodes that the analysis and the rules share."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterator, Sequence

import libcst as cst

_EMPTY_MODULE = cst.Module(body=[])


def code_of(node: cst.CSTNode) -> str:
    """Source text of an expression node, without surrounding whitespace. Rendered once per node
    while its module or the one analysed before it is analysed: the rules ask for the same texts
    many times, and a fix's output shares its unchanged statements with the input."""
    known = _INDEX.texts.get(id(node))
    if known is not None and known[0] is node:
        return known[1]
    known = _INDEX.older.get(id(node))
    if known is not None and known[0] is node:
        _INDEX.texts[id(node)] = known
        return known[1]
    text = _EMPTY_MODULE.code_for_node(node).strip()
    _INDEX.texts[id(node)] = (node, text)  # (the node is kept: its id cannot be reused meanwhile)
    return text


def dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    kind = type(node)  # exact types: LibCST's node classes are ABCs, and isinstance on them is slow
    if kind is cst.Name:  # the most common case, without a list and a join
        return node.value  # type: ignore[attr-defined]
    if kind is not cst.Attribute:
        return None
    parts: list[str] = []
    while kind is cst.Attribute:
        parts.append(node.attr.value)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
        kind = type(node)
    if kind is cst.Name:
        parts.append(node.value)  # type: ignore[attr-defined]
        return ".".join(reversed(parts))
    return None


def call_name(call: cst.Call) -> str | None:
    return dotted(call.func)


def method_name(call: cst.Call) -> str | None:
    """`x.y(...)` -> "y"."""
    if type(call.func) is cst.Attribute:
        return call.func.attr.value
    return None


def receiver(call: cst.Call) -> cst.BaseExpression | None:
    """`x.y(...)` -> node for x."""
    if isinstance(call.func, cst.Attribute):
        return call.func.value
    return None


def iterated_by(call: cst.Call) -> cst.BaseExpression | None:
    """`x` of `iter(x)` or `x.__iter__()`: what the iterator the call makes runs over; else None."""
    return _dunder_or_builtin(call, "iter")


def drawn_from(call: cst.Call) -> cst.BaseExpression | None:
    """`it` of `next(it)` or `it.__next__()`: the iterator the call draws an item from; else None."""
    return _dunder_or_builtin(call, "next")


def _dunder_or_builtin(call: cst.Call, name: str) -> cst.BaseExpression | None:
    func = call.func
    if type(func) is cst.Name and func.value == name and call.args and not call.args[0].star:
        return call.args[0].value if len(call.args) == 1 or name == "next" else None
    if type(func) is cst.Attribute and func.attr.value == f"__{name}__" and not call.args:
        return func.value
    return None


def arg_slots(call: cst.Call) -> Iterator[tuple[int | str, cst.Arg]]:
    """(slot, argument) for each argument of `call` but `*args`/`**kwargs`: its position among the
    positional ones, or its keyword."""
    position = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            yield arg.keyword.value, arg
        else:
            yield position, arg
            position += 1


def kwarg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call, index: int) -> cst.Arg | None:
    pos = [a for a in call.args if a.keyword is None and not a.star]
    return pos[index] if index < len(pos) else None


class _Index(threading.local):
    """Pre-order node list of the module being analysed, so walks are slices instead of re-visits
    (LibCST computes `.children` by visiting). Set by the analysis; per thread."""

    def __init__(self) -> None:
        self.nodes: list = []
        self.spans: dict = {}
        self.texts: dict = {}  # id(node) -> (node, code_of(node)) for the module analysed now ...
        self.older: dict = {}  # ... and for the one before it (the nodes are kept: no id is reused)


_INDEX = _Index()


def index_module(nodes: list, spans: dict) -> None:
    _INDEX.nodes, _INDEX.spans = nodes, spans
    _INDEX.older, _INDEX.texts = _INDEX.texts, {}


def walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node below `node` (inclusive), depth first, in source order."""
    span = _INDEX.spans.get(id(node))
    if span is not None and _INDEX.nodes[span[0]] is node:
        return iter(_INDEX.nodes[span[0] : span[1]])
    return _walk(node)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(child_nodes(cur)))


# Fields that hold only layout (whitespace, commas, brackets): walks skip them.
_LAYOUT = {
    "leading_lines",
    "lines_after_decorators",
    "lpar",
    "rpar",
    "comma",
    "header",
    "footer",
    "semicolon",
    "equal",
    "dot",
    "colon",
    "lbracket",
    "rbracket",
    "lbrace",
    "rbrace",
    "trailing_whitespace",
    "asynchronous",
    "star",
    "indent",
    "default_indent",
    "default_newline",
    "encoding",
    "has_trailing_newline",
    "start",
    "end",
    "relative",
    "posonly_ind",
    "operator",
    "newline",
}
# Where dataclass field order is not source order.
_SOURCE_ORDER = {
    cst.FunctionDef: ("decorators", "name", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
    cst.ExceptHandler: ("type", "name", "body"),
}
_FIELDS: dict[type, tuple[str, ...]] = {}


def child_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The syntax children of `node` in source order, without layout nodes. Much cheaper than
    LibCST's `.children`, which runs a visitor."""
    names = _FIELDS.get(type(node))
    if names is None:
        names = _fields(type(node))
    out: list[cst.CSTNode] = []
    known = _NODE_TYPE
    for name in names:
        value = getattr(node, name)
        kind = type(value)
        if kind is tuple or kind is list:
            for v in value:
                hit = known.get(type(v))
                if hit is None:
                    hit = _is_node(v)
                if hit:
                    out.append(v)
        else:
            hit = known.get(kind)
            if hit is None:
                hit = _is_node(value)
            if hit:
                out.append(value)
    return out


def _fields(cls: type) -> tuple[str, ...]:
    names = _SOURCE_ORDER.get(cls) or tuple(
        f.name for f in dataclasses.fields(cls) if f.name not in _LAYOUT and not f.name.startswith("whitespace")
    )
    _FIELDS[cls] = names
    return names


_NODE_TYPE: dict[type, bool] = {}


def _is_node(value: object) -> bool:
    """isinstance(value, cst.CSTNode), remembered per type (an ABC check each time is slow)."""
    kind = type(value)
    known = _NODE_TYPE.get(kind)
    if known is None:
        known = _NODE_TYPE[kind] = isinstance(value, cst.CSTNode)
    return known


_STATEMENT_TYPE: dict[type, bool] = {}


def is_statement(value: object) -> bool:
    """isinstance(value, cst.BaseStatement), remembered per type."""
    kind = type(value)
    known = _STATEMENT_TYPE.get(kind)
    if known is None:
        known = _STATEMENT_TYPE[kind] = isinstance(value, cst.BaseStatement)
    return known


def calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    call = cst.Call
    for n in walk(node):
        if type(n) is call:  # exact type: an ABC check on every non-call is slow
            yield n


def mentions(node: cst.CSTNode, text: str) -> bool:
    """Does `node` contain a Name/Attribute chain spelled exactly `text`?"""
    for n in walk(node):
        kind = type(n)
        if (kind is cst.Name or kind is cst.Attribute) and dotted(n) == text:
            return True
    return False


def names_in(node: cst.CSTNode) -> set[str]:
    return {n.value for n in walk(node) if type(n) is cst.Name}


def is_literal(node: cst.BaseExpression, value) -> bool:
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value] is value
    if isinstance(node, cst.Integer):
        return node.evaluated_value == value
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == value
    return False


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        v = node.evaluated_value
        return v if isinstance(v, str) else None
    return None


def single_small(stmt: cst.CSTNode) -> cst.BaseSmallStatement | None:
    """The one small statement of a `SimpleStatementLine`, else None."""
    if type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1:
        return stmt.body[0]
    return None


def assign_targets(stmt: cst.CSTNode) -> list[str]:
    """Spelled targets of `a = ...`, `self.a = ...`, `a: T = ...` (tuples unpacked)."""
    small = single_small(stmt)
    out: list[str] = []
    if type(small) is cst.Assign:
        for t in small.targets:
            out.extend(_target_texts(t.target))
    elif type(small) is cst.AnnAssign and small.value is not None:
        out.extend(_target_texts(small.target))
    return out


def _target_texts(target: cst.BaseExpression) -> list[str]:
    if type(target) in (cst.Tuple, cst.List):
        out: list[str] = []
        for el in target.elements:
            out.extend(_target_texts(el.value))
        return out
    d = dotted(target)
    return [d] if d else []


def assigned_value(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    small = single_small(stmt)
    if type(small) in (cst.Assign, cst.AnnAssign):
        return small.value
    return None


def expr_call(stmt: cst.CSTNode) -> cst.Call | None:
    """The call of an expression statement `f(...)`."""
    small = single_small(stmt)
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return small.value
    return None


def loop_variable(loop: cst.For) -> str | None:
    """The loop's variable when it is a plain name (`epoch` in `for epoch in range(n):`)."""
    return loop.target.value if isinstance(loop.target, cst.Name) else None


def body_of(node: cst.CSTNode) -> Sequence[cst.BaseStatement] | None:
    """Statements of a Module or of an IndentedBlock-bodied compound statement."""
    if isinstance(node, cst.Module):
        return node.body
    if isinstance(node, cst.IndentedBlock):
        return node.body
    return None


def strip_docstring(body: Sequence[cst.BaseStatement]) -> int:
    """Index of the first statement after a leading docstring (and `from __future__`)."""
    i = 0
    while i < len(body):
        small = single_small(body[i])
        if (
            isinstance(small, cst.Expr)
            and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString))
            and i == 0
        ):
            i += 1
            continue
        if (
            isinstance(small, cst.ImportFrom) and dotted(small.module) == "__future__"
            if isinstance(small, cst.ImportFrom) and small.module
            else False
        ):
            i += 1
            continue
        break
    return i


def anchor_of(stmt: cst.CSTNode) -> cst.CSTNode:
    """The node a diagnostic about a statement points at: its one small statement, or itself."""
    small = single_small(stmt)
    return small if small is not None else stmt


MAIN_TEST = re.compile(r"__name__\s*==\s*['\"]__main__['\"]|['\"]__main__['\"]\s*==\s*__name__")


def is_main_guard(node: cst.CSTNode | None) -> bool:
    """`if __name__ == "__main__":`: the program's own block, never a branch that may not run."""
    return isinstance(node, cst.If) and MAIN_TEST.fullmatch(code_of(node.test)) is not None
