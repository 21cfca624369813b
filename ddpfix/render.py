"""Render a fixed module, reusing the text of the top-level statements the fix left as they were.

A fix edits a handful of statements; LibCST's `Module.code` renders every node again, which costs as
much as a third of the parse. The edited module shares every untouched top-level statement (the same
object) with the module it was made from, and that module's text is known: each such statement's text
is the slice of the old text between its first line (its leading blank and comment lines included) and
the next statement's. Python's parser says on which line each top-level statement starts; LibCST's
statement lines and Python's are lined up by count, as `positions.StatementPositions` does. Where they
do not line up, or the layout differs (indentation, line ending, encoding), the module is rendered whole.
"""

from __future__ import annotations

import ast

import libcst as cst

from .positions import first_text_line, line_starts

try:
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - another LibCST layout: render whole
    CodegenState = None  # type: ignore[assignment,misc]


def render(new: cst.Module, old: cst.Module, text: str, tree: ast.Module | None) -> str:
    """`new.code`, where `new` was made from `old` (parsed from, or rendered as, `text`; `tree` is
    Python's parse of `text`)."""
    kept = _kept_texts(new, old, text, tree) if tree is not None and CodegenState is not None else None
    if not kept:
        return new.code
    state = CodegenState(default_indent=new.default_indent, default_newline=new.default_newline)
    for line in new.header:
        line._codegen(state)
    last = len(new.body) - 1
    for i, stmt in enumerate(new.body):
        piece = kept.get(id(stmt))  # (`old` keeps its statements alive: an id found is the statement's own)
        if piece is None or (i == last and not new.footer and not new.has_trailing_newline):
            stmt._codegen(state)  # (the file's last newline is dropped as a token of its own)
        else:
            state.add_token(piece)
    for line in new.footer:
        line._codegen(state)
    if new.has_trailing_newline:
        if not state.tokens:
            state.add_token(state.default_newline)
    else:
        state.pop_trailing_newline()
    return "".join(state.tokens)


def _kept_texts(new: cst.Module, old: cst.Module, text: str, tree: ast.Module) -> dict[int, str] | None:
    """id(statement) -> its text, for the top-level statements of `old` that `new` keeps;
    None when the text cannot be cut with certainty (render whole)."""
    if (new.default_indent, new.default_newline, new.encoding) != (
        old.default_indent,
        old.default_newline,
        old.encoding,
    ):
        return None
    shared = {id(s) for s in new.body}
    if not any(id(s) in shared for s in old.body):
        return None
    lines = _top_lines(old, tree)
    if lines is None:
        return None
    full = text if old.has_trailing_newline else text + old.default_newline  # as rendered, before the pop
    breaks = [0, *line_starts(full)]
    starts: list[int] = []
    for stmt, line in zip(old.body, lines):
        first = first_text_line(stmt, line)
        if not 1 <= first <= len(breaks) or (starts and breaks[first - 1] <= starts[-1]):
            return None
        starts.append(breaks[first - 1])
    end = len(full) - len(_lines_text(old, old.footer))
    if starts[0] != len(_lines_text(old, old.header)) or end <= starts[-1]:
        return None
    out = {}
    for stmt, a, b in zip(old.body, starts, starts[1:] + [end]):
        if id(stmt) in shared:
            out[id(stmt)] = full[a:b]
    return out


def _top_lines(old: cst.Module, tree: ast.Module) -> list[int] | None:
    """The line Python puts each of `old`'s top-level statements on (a decorated definition: its first
    decorator's line); None when the two parsers count the statements differently."""
    lines, i = [], 0
    body = tree.body
    for stmt in old.body:
        if i >= len(body):
            return None
        node = body[i]
        decorators = getattr(node, "decorator_list", None)
        lines.append(decorators[0].lineno if decorators else node.lineno)
        i += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
    return lines if i == len(body) else None


def _lines_text(module: cst.Module, lines) -> str:
    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    for line in lines:
        line._codegen(state)
    return "".join(state.tokens)


__all__ = ["render"]
