"""The DDP contract, checked on every output (docs/contract.md).

`apply`, `diff`, the API and the language server analyse what they would hand back, the same way
`ddpfix check` would analyse that file, and every finding that breaks an invariant of the contract
(invariants.py) makes the conversion *incomplete*: it is reported with the invariant, the finding and
the line of the input to change, and `apply` exits 1. The contract therefore cannot be quieter than
`check` on the output, nor louder.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..diagnostic import Diagnostic
from .invariants import BY_NUMBER, INVARIANTS, JUDGES, Invariant, judged
from .lines import to_input


@dataclass(frozen=True)
class Incomplete:
    """One way in which the output breaks the contract."""

    invariant: Invariant
    code: str  # the rule whose finding on the output says so
    message: str
    line: int  # the line of the input to change (1-based)
    output_line: int  # where `check` on the output reports it

    def format(self) -> str:
        return f"incomplete: {self.invariant.label} (invariant {self.invariant.number}): {self.code} {self.message}"

    def to_dict(self) -> dict:
        return {
            "invariant": self.invariant.number,
            "key": self.invariant.key,
            "label": self.invariant.label,
            "title": self.invariant.title,
            "code": self.code,
            "message": self.message,
            "line": self.line,
            "output_line": self.output_line,
        }


def breaches(findings: Iterable[Diagnostic], before: str, after: str) -> list[Incomplete]:
    """The findings of the output (`after`, rewritten from `before`) that break the contract, one per
    rule and line, in the order of the input."""
    where = None
    out: dict[tuple[str, int], Incomplete] = {}
    for d in findings:
        inv = judged(d.code)
        if inv is None or d.info:
            continue
        if where is None:
            where = to_input(before, after)
        out.setdefault((d.code, d.line), Incomplete(inv, d.code, d.message, where(d.line), d.line))
    return sorted(out.values(), key=lambda b: (b.line, b.invariant.number, b.code))


__all__ = ["BY_NUMBER", "INVARIANTS", "JUDGES", "Incomplete", "Invariant", "breaches", "judged"]
