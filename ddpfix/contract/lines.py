"""Where a line of a rewritten script came from: the line of the input a user would change."""

from __future__ import annotations

import difflib
from bisect import bisect_right
from collections.abc import Callable


def to_input(before: str, after: str) -> Callable[[int], int]:
    """A map from 1-based lines of `after` to 1-based lines of `before`: a line the rewrite kept maps to
    itself, also where the rewrite only re-indented it (a print moved under a rank guard); a line it
    inserted maps to the input line it was inserted before (the line before an insertion at the end),
    a line it replaced to the first input line of that change."""
    if before == after:
        return lambda line: line
    old, new = before.splitlines(), after.splitlines()
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    starts = [j1 for _, _, _, j1, _ in blocks]
    last = max(len(old), 1)
    inner: dict[int, list[int]] = {}  # a replaced block -> the input index of each of its output lines

    def within(k: int) -> list[int]:
        if k not in inner:
            _, i1, i2, j1, j2 = blocks[k]
            a, b = [s.strip() for s in old[i1:i2]], [s.strip() for s in new[j1:j2]]
            out = []
            for tag, a1, _a2, b1, b2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
                out.extend(i1 + (a1 + n if tag == "equal" else min(a1, max(len(a) - 1, 0))) for n in range(b2 - b1))
            inner[k] = out
        return inner[k]

    def mapped(line: int) -> int:
        k = max(bisect_right(starts, line - 1) - 1, 0)
        tag, i1, _, j1, _ = blocks[k]
        if tag == "equal":
            i = i1 + (line - 1 - j1)
        elif tag == "replace":
            i = within(k)[line - 1 - j1]
        else:
            i = i1
        return min(max(i + 1, 1), last)

    return mapped


__all__ = ["to_input"]
