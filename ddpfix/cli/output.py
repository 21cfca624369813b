"""What the commands print besides their reports: consoles, error and note lines, per-file summaries."""

from __future__ import annotations

import os
import shlex

import typer
from rich.console import Console

from ..diagnostic import NONE, UNSAFE, FileChange
from ..diff import stats
from ..engine import FileResult


def use_color(flag: bool | None) -> bool | None:
    """Whether to colour: `--color`/`--no-color` first, then NO_COLOR (set and not empty: no colour),
    then FORCE_COLOR (set, not empty and not 0: colour); None leaves it to the terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR", ""):
        return False
    force = os.environ.get("FORCE_COLOR", "")
    if force:
        return force != "0"
    return None


def console(color: bool | None, stderr: bool = False) -> Console:
    choice = use_color(color)
    return Console(
        stderr=stderr,
        force_terminal=choice,
        no_color=None if choice is None else not choice,
        color_system=None if choice is False else "auto",
        highlight=False,
        soft_wrap=True,
    )


def colored(out: Console) -> bool:
    return out.is_terminal and out.color_system is not None


def fail(message: str) -> None:
    typer.echo(f"ddpfix: error: {message}", err=True)


def note(message: str) -> None:
    typer.echo(message, err=True)


def known_format(value: str, choices: tuple[str, ...]) -> None:
    """A one-line error (exit 2) for a `--format` that is not one of `choices`."""
    if value not in choices:
        fail(f"unknown format: {value} (choose from {', '.join(choices)})")
        raise typer.Exit(2)


def summary(res: FileResult, verb: str = "", *, unsafe_fixes: bool = False) -> str:
    """`path: 2 hunk(s), +9 -1; fixed: DDP001, DDP201 (1 of 2); not fixed: DDP306 (unsafe: --unsafe-fixes)`,
    then the withheld fixes with the guard's reasons.

    A code with a finding fixed is listed under `fixed` only, with `(n of m)` when some of its findings
    were not; `not fixed` lists the codes of which nothing was fixed, each with why; a withheld code is
    listed once, in the withheld part. Information lines (`[info]`) are no problem and not listed."""
    assert res.result is not None
    withheld = res.result.withheld
    findings = [d for d in res.result.diagnostics if not d.info and d.code not in withheld]
    fixed = []
    for code in res.result.applied_codes:
        mine = [d for d in res.result.diagnostics if d.code == code]
        done = sum(d.applied for d in mine)
        fixed.append(code if done == len(mine) else f"{code} ({done} of {len(mine)})")
    reasons: dict[str, str] = {}
    for d in findings:
        if d.code not in res.result.applied_codes and d.code not in reasons:
            reasons[d.code] = _why_not(d.fix, unsafe_fixes)
    s = stats(res.result.diff)
    text = f"{res.path}: {s.hunks} hunk(s){verb}, +{s.added} -{s.removed}; fixed: {', '.join(fixed) or 'nothing'}"
    if reasons:
        text += "; not fixed: " + ", ".join(f"{code} ({reasons[code]})" for code in sorted(reasons))
    if withheld:
        text += f"; {withheld_summary(withheld)}"
    return text


def module_summary(change: FileChange, script: str, verb: str = "") -> str:
    """`data_utils.py: 1 hunk(s), +5 -2; edited for train.py: DDP201`: one of the script's own modules
    that the script's fix edits."""
    s = stats(change.diff)
    return f"{change.path}: {s.hunks} hunk(s){verb}, +{s.added} -{s.removed}; edited for {script}: {', '.join(change.codes)}"


def incomplete_lines(res: FileResult) -> list[str]:
    """One line per way the output breaks the DDP contract, with the line of the input to change."""
    assert res.result is not None
    return [f"{res.path}:{b.line}: {b.format()}" for b in res.result.incomplete]


def left_lines(res: FileResult, unsafe_fixes: bool = False) -> list[str]:
    """After `apply`: each finding the result still has that breaks no invariant of the contract (those
    have their incomplete line), with its line and why it was not fixed."""
    assert res.result is not None
    incomplete = {(b.code, b.line) for b in res.result.incomplete}
    out = []
    for d in res.result.diagnostics:
        if d.applied or d.info or (d.code, d.line) in incomplete:
            continue
        why = f"withheld: {d.withheld}" if d.withheld is not None else _why_not(d.fix, unsafe_fixes)
        out.append(f"{res.path}:{d.line}: left: {d.code} {d.message} ({why})")
    return out


def _why_not(fix: str, unsafe_fixes: bool) -> str:
    if fix == NONE:
        return "no automatic fix"
    if fix == UNSAFE and not unsafe_fixes:
        return "unsafe: --unsafe-fixes"
    return "fix not made here"


def withheld_summary(withheld: dict[str, str]) -> str:
    n = len(withheld)
    items = "; ".join(f"{code} ({reason})" for code, reason in withheld.items())
    return f"{n} fix{'es' if n > 1 else ''} withheld as unsafe for this script: {items}"


def next_step(paths: list[str], incomplete: bool = False) -> str:
    """The line after an `apply` that rewrote `paths`: run the result under torchrun (once the lines
    marked incomplete are changed, when there are any)."""
    script = shlex.quote(paths[0]) if len(paths) == 1 else "SCRIPT"
    first = "change the lines marked incomplete, then " if incomplete else ""
    return f"next: {first}ddpfix verify {script} -- <your script's args>"


__all__ = [
    "colored",
    "console",
    "fail",
    "incomplete_lines",
    "left_lines",
    "known_format",
    "next_step",
    "note",
    "summary",
    "use_color",
    "withheld_summary",
]
