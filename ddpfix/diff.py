"""Unified diffs (difflib) and their hunk metadata (unidiff)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from unidiff import PatchSet

NO_EOL = "\\ No newline at end of file\n"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def split_lines(text: str) -> list[str]:
    """Lines as git and Python's tokenizer see them: broken at \\n, \\r\\n or \\r only (not at form
    feeds or U+2028, where `str.splitlines` also breaks), each with its ending."""
    return _LINE.findall(text)


def unified_diff(old: str, new: str, path: str, context: int = 3) -> str:
    """`git apply`-compatible unified diff of two texts (with the no-newline marker difflib omits)."""
    lines = difflib.unified_diff(
        split_lines(old),
        split_lines(new),
        fromfile=f"a/{path.lstrip('/')}",
        tofile=f"b/{path.lstrip('/')}",
        n=context,
    )
    out = []
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n" + NO_EOL)
    return "".join(out)


@dataclass(frozen=True)
class DiffStats:
    hunks: int
    added: int
    removed: int


def stats(diff: str) -> DiffStats:
    if not diff:
        return DiffStats(0, 0, 0)
    patch = PatchSet(diff)
    return DiffStats(
        hunks=sum(len(f) for f in patch),
        added=sum(f.added for f in patch),
        removed=sum(f.removed for f in patch),
    )


def edits_between(old: str, new: str) -> list[dict]:
    """Line-granular edits turning `old` into `new`: 1-based `line`/`col` to `end_line`/`end_col`
    (exclusive, code points) in `old`, replaced by `content`. Applied back to front they give `new`."""
    a, b = split_lines(old), split_lines(new)
    edits = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        edits.append({"line": i1 + 1, "col": 1, "end_line": i2 + 1, "end_col": 1, "content": "".join(b[j1:j2])})
    if edits and a and not a[-1].endswith(("\n", "\r")):
        # the old text ends without a line break: a range up to "the line after" ends at the last line's end
        last = len(a)
        for e in edits:
            for key in ("", "end_"):
                if e[f"{key}line"] == last + 1:
                    e[f"{key}line"], e[f"{key}col"] = last, len(a[-1]) + 1
    return edits


def apply_edits(old: str, edits: list[dict]) -> str:
    """Inverse of `edits_between` (used by tests and by consumers of the JSON output)."""
    lines = split_lines(old)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return (starts[line - 1] if line - 1 < len(starts) else starts[-1]) + col - 1

    out = old
    for e in sorted(edits, key=lambda e: (e["line"], e["col"]), reverse=True):
        out = out[: offset(e["line"], e["col"])] + e["content"] + out[offset(e["end_line"], e["end_col"]) :]
    return out
