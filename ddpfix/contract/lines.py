"""Where a line of a rewritten script came from: the line of the input a user would change."""

from __future__ import annotations

import difflib
from bisect import bisect_right
from collections.abc import Callable


def to_input(before: str, after: str) -> Callable[[int], int]:
    """A map from 1-based lines of `after` to 1-based lines of `before`: a line the rewrite kept maps to
    itself, a line it inserted or replaced to the first input line of that change (the line before an
    insertion at the end)."""
    if before == after:
        return lambda line: line
    old, new = before.splitlines(), after.splitlines()
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    starts = [j1 for _, _, _, j1, _ in blocks]
    last = max(len(old), 1)

    def mapped(line: int) -> int:
        k = max(bisect_right(starts, line - 1) - 1, 0)
        tag, i1, _, j1, _ = blocks[k]
        i = i1 + (line - 1 - j1) if tag == "equal" else i1
        return min(max(i + 1, 1), last)

    return mapped


__all__ = ["to_input"]
