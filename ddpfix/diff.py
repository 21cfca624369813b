"""Unified diffs (difflib) and their hunk metadata (unidiff)."""
from __future__ import annotations

import difflib
from dataclasses import dataclass

from unidiff import PatchSet

NO_EOL = "\\ No newline at end of file\n"


def unified_diff(old: str, new: str, path: str, context: int = 3) -> str:
    """`git apply`-compatible unified diff of two texts (with the no-newline marker difflib omits)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
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
