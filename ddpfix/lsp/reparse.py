"""Parse an edited document again, reusing the LibCST statements of the top-level statements whose text
did not change.

LibCST's parse is most of an analysis of a long script, and LibCST cannot parse incrementally. But a
module's top-level statements parse independently: cut the text at the first line of each top-level
statement (decorators included; Python's own parser, which is fast, says where they are), and each
piece parses alone to the statement the whole parse gives, its trailing blank and comment lines (at
column 0) becoming the leading lines of the next statement there, and the module's footer after the
last. So the server keeps, per document, each piece's statement keyed by the piece's text; after an
edit only the pieces whose text changed are parsed, and the module is put together from the rest.

It is used only where the result provably equals a whole parse's (`tests/test_lsp_reparse.py` compares
the two node by node): every piece must parse to one statement and agree on the indentation and line
ending LibCST would pick for the whole file (four spaces, and the first line's ending); anything else
(a 2-space or tab-indented file, mixed line endings, a piece that does not parse, an and/or chain long
enough for the engine's own check) is parsed whole, with the engine's own checks and messages.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

import libcst as cst

from ..api import MAX_CHAIN, Parsed, gc_paused, might_need_ddp, parse_source
from ..parsing import not_training

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # Python's lines: \n, \r\n and \r end one
_LOOSE = re.compile(r"(?:#[^\r\n]*)?(?:\r\n|\r|\n)?\Z")  # a line between statements that may be cut at
_BOOL = re.compile(r"\b(?:and|or)\b")
INDENT = "    "  # LibCST's default_indent when a piece has no indented block


@dataclass
class Statements:
    """The top-level statements of one version: piece text -> (statement, lines after it)."""

    newline: str
    encoding: str = "utf-8"
    pieces: dict[str, tuple[cst.BaseStatement, tuple[cst.EmptyLine, ...]]] = field(default_factory=dict)
    header: tuple[str, tuple[cst.EmptyLine, ...]] | None = None  # the first piece's module header
    reused: int = 0  # pieces taken from the previous version (for tests and the benchmark)


def _pieces(text: str, tree: ast.Module) -> list[str] | None:
    """The text cut at the first line of every top-level statement (the first piece from the start).

    None when a line between two statements is neither empty nor a comment at column 0: which
    statement owns such a line (the block above, by its indentation, or the statement below) depends
    on what follows it, so a piece alone could differ from the whole."""
    starts: list[int] = []
    ends: list[int] = []
    for node in tree.body:
        line = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        end = node.end_lineno or node.lineno
        if not starts or line > ends[-1]:
            starts.append(line)
            ends.append(end)
        else:  # `a = 1; b = 2`: one line, one piece
            ends[-1] = max(ends[-1], end)
    if not starts:
        return None
    lines = _LINE.findall(text)
    if ends[-1] > len(lines):
        return None
    for end, start in zip(ends, starts[1:] + [len(lines) + 1]):
        if any(not _LOOSE.match(line) for line in lines[end : start - 1]):
            return None
    cuts = [0] + [s - 1 for s in starts[1:]] + [len(lines)]
    return ["".join(lines[a:b]) for a, b in zip(cuts, cuts[1:])]


def statements_of(parsed: Parsed) -> Statements | None:
    """The pieces of a whole parse (what a later `reparse` may reuse); None where none can be."""
    module, tree = parsed.module, parsed.tree
    if module is None or tree is None or module.default_indent != INDENT or len(tree.body) == 0:
        return None
    pieces = _pieces(parsed.text, tree)
    if pieces is None or len(pieces) != len(module.body):
        return None
    out = Statements(module.default_newline, module.encoding)
    body = module.body
    for i, (piece, stmt) in enumerate(zip(pieces, body)):
        after = tuple(body[i + 1].leading_lines) if i + 1 < len(body) else tuple(module.footer)
        if i == 0:
            out.header = (piece, tuple(module.header))
        else:
            stmt = stmt.with_changes(leading_lines=())
        out.pieces[piece] = (stmt, after)
    return out


@gc_paused
def reparse(text: str, path: str, previous: Statements | None) -> tuple[Parsed, Statements | None]:
    """`parse_source(text, path)`, reusing `previous`'s statements where the text of their piece is
    unchanged; also returns this version's statements for the next edit."""
    if previous is None or not might_need_ddp(text, path):
        parsed = parse_source(text, path)
        return parsed, statements_of(parsed)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree = None
    pieces = _pieces(text, tree) if tree is not None else None
    if pieces is None or len(_BOOL.findall(text)) > MAX_CHAIN:
        parsed = parse_source(text, path)  # the engine's own checks and messages
        return parsed, statements_of(parsed)
    if not_training(text, tree, path):  # as `parse_source` decides: no LibCST parse, no pieces
        return Parsed(text, path, text, None, tree, not_training=True), None
    out = Statements(previous.newline, previous.encoding)
    body: list[cst.BaseStatement] = []
    header: tuple[cst.EmptyLine, ...] = ()
    carry: tuple[cst.EmptyLine, ...] = ()
    config = None
    seen: set[str] = set()
    for i, piece in enumerate(pieces):
        # a piece met twice in this version is parsed twice: a module never holds one node twice
        known = previous.pieces.get(piece) if piece not in seen else None
        seen.add(piece)
        if i == 0 and previous.header is not None and previous.header[0] == piece and known is not None:
            header = previous.header[1]
            out.reused += 1
        elif known is None or i == 0:  # (the first piece: its header is parsed with it)
            try:
                m = cst.parse_module(piece)
            except Exception:  # a piece alone may differ from the whole (nothing should): parse it whole
                parsed = parse_source(text, path)
                return parsed, statements_of(parsed)
            if len(m.body) != 1 or m.default_indent != INDENT or (i > 0 and m.header):
                parsed = parse_source(text, path)
                return parsed, statements_of(parsed)
            if i == 0:
                config = m
                header = tuple(m.header)
                out.encoding = m.encoding
            elif m.default_newline != previous.newline and "\n" in piece.replace("\r", "\n"):
                parsed = parse_source(text, path)
                return parsed, statements_of(parsed)
            known = (m.body[0], tuple(m.footer))
        else:
            out.reused += 1
        stmt, after = known
        out.pieces[piece] = known
        if i == 0:
            out.header = (piece, header)
        body.append(stmt.with_changes(leading_lines=carry) if i > 0 else stmt)
        carry = after
    if config is not None and config.default_newline != previous.newline:
        parsed = parse_source(text, path)  # the first line's ending changed: every piece may differ
        return parsed, statements_of(parsed)
    module = cst.Module(
        body=body,
        header=header,
        footer=carry,
        encoding=out.encoding,
        default_indent=INDENT,
        default_newline=previous.newline,
        has_trailing_newline=text[-1:] in ("\n", "\r"),
    )
    return Parsed(text, path, text, module, tree), out


__all__ = ["Statements", "reparse", "statements_of"]
