"""Suppression comments: `# ddpfix: ignore[DDP401]` (or bare `# ddpfix: ignore`).

A trailing comment silences the listed rules on its own line; a comment on a line of its own silences
them on the next line of code (a run of comment lines may sit between them, a blank line may not).
A silenced finding is not reported and its fix is not made. A suppression that silences nothing is
reported as DDP000 (like ruff's RUF100).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, field

from .diagnostic import NONE, Diagnostic
from .rule import Rule

DIRECTIVE = re.compile(r"#\s*ddpfix\s*:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
MARKER = "ddpfix"  # cheap pre-check before tokenizing
NEWLINE = re.compile(r"\r\n|\r|\n")  # what Python (and LibCST) count as a line break; not str.splitlines


class UnusedSuppression(Rule):
    code = "DDP000"
    name = "unused-suppression"
    message = "suppression comment that silences nothing: remove it"
    fix = NONE
    docs = """
## What
A `# ddpfix: ignore[...]` comment that silences no finding on the line it applies to, or that names
a rule code ddpfix does not have.

## Why
A stale suppression hides the next real problem on that line: once the code changes, a mistake the
comment was never meant for (say an unguarded `torch.save` next to a silenced `print`) goes
unreported. Nothing breaks in PyTorch itself; this keeps the silencing honest (the same idea as
ruff's RUF100).

## Example
```python
torch.save(state, "ckpt.pt")  # ddpfix: ignore[DDP406]
```
reports `DDP000 unused suppression (unused: DDP406)`; the finding on that line is DDP401, so the
comment should name that code, or go.

Where a suppression applies:
```python
print(loss)  # ddpfix: ignore[DDP406]      <- trailing: this line
# ddpfix: ignore[DDP401]                  <- on its own line: the next line of code
torch.save(state, "ckpt.pt")
```
A bare `# ddpfix: ignore` silences every rule on its line. Codes are matched exactly. A code whose
rule is not selected in this run is not reported as unused.

## Fix safety
No automatic fix: delete the comment, or correct the code it names.
"""

    def run(self, ctx) -> None:  # reported by the engine after every other rule, not here
        return None


UNUSED = UnusedSuppression()


@dataclass
class Suppression:
    line: int  # where the comment is (1-based)
    col: int  # 1-based column of '#'
    end_col: int
    codes: tuple[str, ...] | None  # None: every rule
    target: int | None  # the line of code it silences (None: attached to nothing)
    used: set[str] = field(default_factory=set)


class Suppressions:
    """The suppression comments of one source; `silences()` is asked by `Context.report()`."""

    def __init__(self, items: list[Suppression]) -> None:
        self.items = items
        self._by_line: dict[int, list[Suppression]] = {}
        for s in items:
            if s.target is not None:
                self._by_line.setdefault(s.target, []).append(s)

    def silences(self, code: str, line: int) -> bool:
        hit = False
        for s in self._by_line.get(line, ()):
            if s.codes is None or code in s.codes:
                s.used.add(code)
                hit = True
        return hit

    def unused(self, active: Iterable[str], known: Iterable[str]) -> list[Diagnostic]:
        """DDP000 for each comment that silenced nothing (only codes of rules that ran count)."""
        active, known = set(active), set(known)
        out = []
        for s in self.items:
            if s.codes is None:
                if s.used or not active:  # no rule ran here (not a training script): nothing to judge
                    continue
                detail = "silences nothing" if s.target is not None else "is not attached to a line of code"
                out.append(_diag(s, f"unused suppression: `# ddpfix: ignore` {detail}"))
                continue
            unknown = [c for c in s.codes if c not in known]
            unused = [c for c in s.codes if c in known and c in active and c not in s.used]
            parts = []
            if unused:
                parts.append("unused: " + ", ".join(unused))
            if unknown:
                parts.append("unknown: " + ", ".join(unknown))
            if not s.codes:
                parts.append("no rule code between the brackets")
            if parts:
                out.append(_diag(s, f"unused suppression ({'; '.join(parts)})"))
        return out


def _diag(s: Suppression, message: str) -> Diagnostic:
    return Diagnostic(
        code=UNUSED.code, message=message, line=s.line, col=s.col, end_line=s.line, end_col=s.end_col, fix=NONE
    )


def might_have(source: str | bytes | None) -> bool:
    if source is None:
        return True
    return (MARKER.encode() in source.lower()) if isinstance(source, bytes) else (MARKER in source.lower())


def scan(text: str) -> Suppressions | None:
    """Find suppression comments (real comments only, not text inside strings). None when there are none."""
    if MARKER not in text.lower():
        return None
    lines = NEWLINE.split(text)
    comments: list[tuple[int, int, str]] = []  # (line, col0, text)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if tok.type == tokenize.COMMENT and MARKER in tok.string.lower():
                comments.append((tok.start[0], tok.start[1], tok.string))
    except (tokenize.TokenError, SyntaxError):  # cannot happen for parsed code; fall back to a line scan
        comments = [
            (i + 1, l.index("#"), l[l.index("#") :]) for i, l in enumerate(lines) if "#" in l and MARKER in l.lower()
        ]
    items = []
    for line, col0, comment in comments:
        m = DIRECTIVE.search(comment)
        if m is None:
            continue
        raw = m.group("codes")
        codes = None if raw is None else tuple(c.strip().upper() for c in raw.split(",") if c.strip())
        own_line = not lines[line - 1][:col0].strip() if line - 1 < len(lines) else False
        items.append(
            Suppression(
                line=line,
                col=col0 + m.start() + 1,
                end_col=col0 + m.end() + 1,
                codes=codes,
                target=_next_code_line(lines, line) if own_line else line,
            )
        )
    return Suppressions(items) if items else None


def _next_code_line(lines: list[str], line: int) -> int | None:
    for i in range(line, len(lines)):  # lines[i] is line i + 1
        stripped = lines[i].strip()
        if not stripped:
            return None
        if not stripped.startswith("#"):
            return i + 1
    return None


def selected(select: Iterable[str] | None, ignore: Iterable[str] | None) -> bool:
    """Whether DDP000 is selected, with the prefix matching of `transforms.expand`."""

    def matches(prefixes: Iterable[str]) -> bool:
        return any(p.upper() == "ALL" or UNUSED.code.startswith(p.upper()) for p in prefixes)

    if select is not None:
        select = list(select)
        if select and not matches(select):
            return False
    return not (ignore and matches(list(ignore)))


__all__ = ["Suppression", "Suppressions", "UNUSED", "UnusedSuppression", "scan", "selected", "might_have"]
