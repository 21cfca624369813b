"""Where a node is in the source: the ranges LibCST's PositionProvider gives, found more cheaply.

PositionProvider renders the whole module through a recording codegen state. Rules report a handful
of nodes per file, so `StatementPositions` renders only the statement that holds a reported node:
Python's own parser (`ast`, which the parse step runs anyway) says on which line each statement
starts, and the rendered text is checked against the source at that place before it is trusted.
Whatever cannot be placed that way (a node outside any statement, a tree the two parsers count
differently) falls back to one recording pass over the whole module.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Mapping
from contextlib import contextmanager

import libcst as cst
from libcst.metadata import CodePosition, CodeRange, MetadataWrapper, PositionProvider

Spans = dict[cst.CSTNode, tuple[int, int]]
_LINE_BREAK = re.compile(r"\r\n?|\n")


class _Stop(Exception):
    """Raised by the recording state once the node asked for is rendered."""


def line_starts(text: str) -> list[int]:
    """Offsets where each line after the first starts."""
    return [m.end() for m in _LINE_BREAK.finditer(text)]


def _position(breaks: list[int], offset: int) -> CodePosition:
    line = bisect.bisect_right(breaks, offset)
    return CodePosition(line + 1, offset - (breaks[line - 1] if line else 0))


def _render(
    node: cst.CSTNode,
    module: cst.Module,
    spans: Spans,
    *,
    offset: int = 0,
    indent: list[str] | None = None,
    stop: cst.CSTNode | None = None,
    is_elif: bool = False,
) -> str:
    """Render `node`, recording each node's (start, end) character offsets into `spans` the way
    PositionProvider records syntactic positions; stop early once `stop` is rendered."""
    state = _recording_state()(default_indent=module.default_indent, default_newline=module.default_newline)
    state.offset, state.stack, state.popped, state.spans, state.stop = offset, [], "", spans, stop
    state.indent_tokens = list(indent or ())
    try:
        node._codegen(state, **({"is_elif": True} if is_elif else {}))
    except _Stop:
        pass
    return "".join(state.tokens) + state.popped


@functools.cache
def _recording_state() -> type:
    from libcst._nodes.internal import CodegenState

    class RecordingState(CodegenState):
        __slots__ = ("offset", "stack", "popped", "spans", "stop")

        def add_indent_tokens(self) -> None:
            self.tokens.extend(self.indent_tokens)
            self.offset += sum(map(len, self.indent_tokens))

        def add_token(self, value: str) -> None:
            self.tokens.append(value)
            self.offset += len(value)

        def pop_trailing_newline(self) -> None:  # gone from the text, not from the positions
            if self.tokens:
                self.popped = self.tokens.pop()

        def before_codegen(self, node: cst.CSTNode) -> None:
            self.stack.append(self.offset)

        def after_codegen(self, node: cst.CSTNode) -> None:
            start = self.stack.pop()
            if node not in self.spans:
                self.spans[node] = (start, self.offset)
            if node is self.stop:
                raise _Stop

        @contextmanager
        def record_syntactic_position(self, node, *, start_node=None, end_node=None):  # type: ignore[override]
            start = self.offset
            yield  # not on the way out of a _Stop: what was rendered of `node` so far is not its range
            spans = self.spans
            spans[node] = (
                spans[start_node][0] if start_node is not None else start,
                spans[end_node][1] if end_node is not None else self.offset,
            )

    return RecordingState


class ModulePositions:
    """Node -> CodeRange for every node, from one recording render of the whole module."""

    def __init__(self, module: cst.Module) -> None:
        self._spans: Spans = {}
        self._breaks = line_starts(_render(module, module, self._spans))

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        start, end = self._spans[node]
        return CodeRange(_position(self._breaks, start), _position(self._breaks, end))


def module_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    try:
        return ModulePositions(module)
    except (ImportError, TypeError, AttributeError):  # another LibCST layout: the public, slower way
        return dict(MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))


class StatementPositions:
    """Node -> CodeRange, rendering only the statement that holds the node (see the module doc).

    `text` is the source `module` was parsed from, `parent` maps each node to its parent and `tree`
    is Python's parse of the same text (parsed here when not given).
    """

    def __init__(
        self, module: cst.Module, text: str, parent: Mapping[cst.CSTNode, cst.CSTNode], tree: ast.Module | None = None
    ) -> None:
        self.module, self.text, self.parent = module, text, parent
        self._tree = tree
        self._breaks = line_starts(
            text if module.has_trailing_newline else text + module.default_newline
        )  # as rendered
        self._spans: Spans = {}
        self._lines: dict[cst.CSTNode, int] | None = None
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        span = self._spans.get(node) or self._render_statement(node)
        if span is None:
            if self._whole is None:
                self._whole = module_positions(self.module)
            return self._whole[node]
        return CodeRange(_position(self._breaks, span[0]), _position(self._breaks, span[1]))

    def _render_statement(self, node: cst.CSTNode) -> tuple[int, int] | None:
        unit: cst.CSTNode | None = node
        while unit is not None and not isinstance(unit, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            unit = self.parent.get(unit)
        first = self._first_line(unit) if unit is not None else None
        if first is None or not 1 <= first <= len(self._breaks) + 1:
            return None
        indent = []
        up = self.parent.get(unit)
        while up is not None:
            if isinstance(up, (cst.IndentedBlock, cst.Match)):  # a match statement indents its cases itself
                indent.append(self.module.default_indent if up.indent is None else up.indent)
            up = self.parent.get(up)
        base = self._breaks[first - 2] if first > 1 else 0
        elif_ = isinstance(unit, cst.If) and isinstance(self.parent.get(unit), cst.If)
        spans: Spans = {}
        try:
            text = _render(unit, self.module, spans, offset=base, indent=indent[::-1], stop=node, is_elif=elif_)
        except (ImportError, TypeError, AttributeError):
            return None
        if not self._found_at(text, base):  # the two parsers disagree about this statement
            return None
        self._spans.update(spans)
        return spans.get(node)

    def _found_at(self, rendered: str, base: int) -> bool:
        if self.text.startswith(rendered, base):
            return True
        newline = self.module.default_newline  # the file's last line, which has none
        return (
            rendered.endswith(newline)
            and base + len(rendered) - len(newline) == len(self.text)
            and self.text.startswith(rendered[: -len(newline)], base)
        )

    def _first_line(self, unit: cst.CSTNode) -> int | None:
        """The line where `unit`'s text (its leading blank and comment lines included) begins."""
        if self._lines is None:
            self._lines = self._statement_lines()
        line = self._lines.get(unit)
        return None if line is None else first_text_line(unit, line)

    def _statement_lines(self) -> dict[cst.CSTNode, int]:
        """Each statement line and compound statement -> the line Python puts it on (for a decorated
        definition, the first decorator's line). Empty when the two trees do not line up."""
        try:
            tree = self._tree if self._tree is not None else ast.parse(self.text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
        lines: list[int] = []
        _ast_lines(tree.body, lines)
        units: list[tuple[cst.CSTNode | None, int]] = []
        _cst_units(self.module.body, units)
        out, i = {}, 0
        for unit, count in units:
            if unit is not None and i < len(lines):
                out[unit] = lines[i]
            i += count
        return out if i == len(lines) else {}


def first_text_line(unit: cst.CSTNode, line: int) -> int:
    """The line where `unit`'s text begins (its leading blank and comment lines included), given the
    line Python puts it on (a decorated definition: its first decorator's)."""
    decorators = getattr(unit, "decorators", ())
    return line - len(unit.leading_lines) - (len(decorators[0].leading_lines) if decorators else 0)  # type: ignore[attr-defined]


def _ast_lines(body: list[ast.stmt], out: list[int]) -> None:
    """Pre-order start lines of Python's statements."""
    for stmt in body:
        decorators = getattr(stmt, "decorator_list", None)
        out.append(decorators[0].lineno if decorators else stmt.lineno)
        for field in ("body", "handlers", "cases", "orelse", "finalbody"):
            for child in getattr(stmt, field, ()):
                if isinstance(child, ast.stmt):
                    _ast_lines([child], out)
                else:  # an except handler or a match case
                    _ast_lines(child.body, out)


def _cst_units(body, out: list[tuple[cst.CSTNode | None, int]]) -> None:
    """LibCST's statements in the same order: (statement, how many Python statements it holds)."""
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.append((stmt, len(stmt.body)))
            continue
        out.append((stmt, 1))
        for block in _blocks(stmt):
            if isinstance(block, cst.SimpleStatementSuite):
                out.append((None, len(block.body)))
            elif isinstance(block, cst.If):  # elif
                _cst_units([block], out)
            else:
                _cst_units(block.body, out)


def _blocks(stmt: cst.CSTNode) -> list:
    """A compound statement's bodies in source order (an `elif` as its If statement)."""
    if isinstance(stmt, cst.Match):
        return [case.body for case in stmt.cases]
    out = [stmt.body]  # type: ignore[attr-defined]
    out += [h.body for h in getattr(stmt, "handlers", ())]
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, cst.If):
        out.append(orelse)
    elif orelse is not None:
        out.append(orelse.body)
    finalbody = getattr(stmt, "finalbody", None)
    if finalbody is not None:
        out.append(finalbody.body)
    return out
