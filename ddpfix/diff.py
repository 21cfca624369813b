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
