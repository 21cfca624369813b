"""Document text as the LSP sees it: lines, negotiated position encodings, changes and edits.

LSP lines end only at `\\n`, `\\r\\n` or `\\r` (Python's `str.splitlines` also splits at form feeds,
`\\x1c`-`\\x1e`, `\\x85`, `\\u2028` and `\\u2029`, which would shift every position after one). Columns
count code units of the negotiated encoding: UTF-16 (the default, VS Code), UTF-8 (Neovim) or
UTF-32 (code points, Emacs). ddpfix's own diagnostics use 1-based lines and 1-based code-point
columns; everything converts here and nowhere else.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Iterable, Sequence

from lsprotocol import types

from ..diff import split_lines  # noqa: F401  (one line splitter for diffs, edits and positions)

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"

_EOL = re.compile(r"\r\n|\r|\n")


def units(text: str, encoding: str) -> int:
    """Length of `text` in code units of `encoding`."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8", "surrogatepass"))
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def chars_for_units(line: str, n: int, encoding: str) -> int:
    """How many code points of `line` fit in `n` code units (rounded down inside a character)."""
    if n <= 0:
        return 0
    if encoding == UTF32 or line.isascii():
        return min(n, len(line))
    if encoding == UTF8:
        data = line.encode("utf-8", "surrogatepass")
        return len(data[:n].decode("utf-8", "ignore"))
    data = line.encode("utf-16-le", "surrogatepass")
    return len(data[: 2 * n].decode("utf-16-le", "ignore"))


class Text:
    """An immutable snapshot of a document: offsets <-> LSP positions in one encoding."""

    def __init__(self, text: str, encoding: str = UTF16) -> None:
        self.text = text
        self.encoding = encoding
        self.starts = [0] + [m.end() for m in _EOL.finditer(text)]

    def line(self, index: int) -> str:
        """Line `index` (0-based) without its terminator; '' past the end."""
        if index < 0 or index >= len(self.starts):
            return ""
        start = self.starts[index]
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)
        return _EOL.sub("", self.text[start:end], count=1) if end > start else ""

    def offset(self, pos: types.Position) -> int:
        """String offset of an LSP position; characters past the line end clamp to the end,
        lines past the document end clamp to the end of the document (as the spec asks)."""
        if pos.line >= len(self.starts):
            return len(self.text)
        line = self.line(pos.line)
        return self.starts[pos.line] + chars_for_units(line, pos.character, self.encoding)

    def position(self, offset: int) -> types.Position:
        offset = max(0, min(offset, len(self.text)))
        index = bisect.bisect_right(self.starts, offset) - 1
        start = self.starts[index]
        line = self.line(index)
        col = min(offset - start, len(line))
        return types.Position(line=index, character=units(line[:col], self.encoding))

    def point(self, line: int, col: int) -> types.Position:
        """LSP position of a 1-based line and 1-based code-point column (ddpfix's coordinates)."""
        index = line - 1
        if index >= len(self.starts):
            return self.position(len(self.text))
        text = self.line(index)
        return types.Position(line=index, character=units(text[: max(col - 1, 0)], self.encoding))

    def range(self, line: int, col: int, end_line: int, end_col: int) -> types.Range:
        return types.Range(start=self.point(line, col), end=self.point(end_line, end_col))


def apply_changes(text: str, changes: Iterable[object], encoding: str) -> str:
    """Apply didChange content changes in order (ranged ones incrementally, others as full text)."""
    for change in changes:
        rng = getattr(change, "range", None)
        if rng is None:
            text = change.text  # type: ignore[attr-defined]
            continue
        snap = Text(text, encoding)
        start, end = snap.offset(rng.start), snap.offset(rng.end)
        if end < start:
            start, end = end, start
        text = text[:start] + change.text + text[end:]  # type: ignore[attr-defined]
    return text


def text_edits(old: str, new: str, encoding: str) -> list[types.TextEdit]:
    """The few line-level TextEdits that turn `old` into `new` (non-overlapping, in document order)."""
    if old == new:
        return []
    a, b = split_lines(old), split_lines(new)
    snap = Text(old, encoding)
    starts = [0]
    for line in a:
        starts.append(starts[-1] + len(line))
    edits = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        rng = types.Range(start=snap.position(starts[i1]), end=snap.position(starts[i2]))
        edits.append(types.TextEdit(range=rng, new_text="".join(b[j1:j2])))
    return edits


def apply_text_edits(text: str, edits: Sequence[types.TextEdit], encoding: str) -> str:
    """Apply TextEdits (all relative to `text`) the way a client does; used by commands and tests."""
    snap = Text(text, encoding)
    spans = sorted(
        ((snap.offset(e.range.start), snap.offset(e.range.end), e.new_text) for e in edits), key=lambda s: (s[0], s[1])
    )
    out, pos = [], 0
    for start, end, new_text in spans:
        if start < pos:
            raise ValueError("overlapping text edits")
        out.append(text[pos:start])
        out.append(new_text)
        pos = end
    out.append(text[pos:])
    return "".join(out)
