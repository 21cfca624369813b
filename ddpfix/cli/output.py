"""What the commands print besides their reports: consoles, error and note lines, per-file summaries."""

from __future__ import annotations

import typer
from rich.console import Console

from ..diff import stats
from ..engine import FileResult


def console(color: bool | None, stderr: bool = False) -> Console:
    return Console(
        stderr=stderr,
        force_terminal=True if color else None,
        no_color=color is False,
        highlight=False,
        soft_wrap=True,
    )


def fail(message: str) -> None:
    typer.echo(f"ddpfix: error: {message}", err=True)


def note(message: str) -> None:
    typer.echo(message, err=True)


def summary(res: FileResult, verb: str = "") -> str:
    """`path: 2 hunk(s), +9 -1; fixed: DDP001; not fixed: DDP104; 1 fix withheld: DDP006 (why)`."""
    assert res.result is not None
    applied = res.result.applied_codes
    withheld = res.result.withheld
    remaining = sorted({d.code for d in res.result.diagnostics if not d.applied} - set(withheld))
    s = stats(res.result.diff)
    text = f"{res.path}: {s.hunks} hunk(s){verb}, +{s.added} -{s.removed}; fixed: {', '.join(applied) or 'nothing'}"
    if remaining:
        text += f"; not fixed: {', '.join(remaining)}"
    if withheld:
        text += f"; {withheld_summary(withheld)}"
    return text


def incomplete_lines(res: FileResult) -> list[str]:
    """One line per way the output breaks the DDP contract, with the line of the input to change."""
    assert res.result is not None
    return [f"{res.path}:{b.line}: {b.format()}" for b in res.result.incomplete]


def withheld_summary(withheld: dict[str, str]) -> str:
    n = len(withheld)
    items = "; ".join(f"{code} ({reason})" for code, reason in withheld.items())
    return f"{n} fix{'es' if n > 1 else ''} withheld as unsafe for this script: {items}"


__all__ = ["console", "fail", "incomplete_lines", "note", "summary", "withheld_summary"]
