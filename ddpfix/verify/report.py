"""Render a :class:`~ddpfix.verify.checks.VerifyReport`: lines for people (a check a line, its evidence
below it), JSON for machines."""

from __future__ import annotations

import json
import shlex

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .checks import FAIL, NA, PASS, RunData, VerifyReport, fmt_compared, short_path

STYLES = {PASS: "bold green", FAIL: "bold red", NA: "dim"}
LABELS = {PASS: "PASS", FAIL: "FAIL", NA: "n/a"}
OUTPUT_LINES = 40
EVIDENCE_INDENT = 6


def to_json(report: VerifyReport) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str)


def headline(report: VerifyReport) -> str:
    m = report.meta
    script = m.get("script") or "?"
    try:
        shown = short_path(script, RunData(script=script, cwd=m.get("cwd") or ""))
    except Exception:
        shown = script
    cmd = " ".join(shlex.quote(a) for a in [shown, *(m.get("args") or [])])
    nodes = m.get("nnodes") or 1
    layout = f"{m.get('world_size')} ranks" + (f" ({nodes} nodes x {m.get('nproc')})" if nodes > 1 else "")
    backend = m.get("backend_used") or (
        m.get("backend_option") if m.get("backend_option") != "auto" else "no process group"
    )
    return f"ddpfix verify {cmd}: {layout}, backend {backend}, {m.get('duration', 0):.1f} s"


def summary(report: VerifyReport) -> str:
    applicable = [c for c in report.checks if c.status != NA]
    na = len(report.checks) - len(applicable)
    na_txt = f"; {na} not applicable" if na else ""
    if report.ok:
        return f"OK: all {len(applicable)} applicable checks passed{f' ({na} not applicable)' if na else ''}"
    names = ", ".join(c.name for c in report.failed)
    return f"FAILED: {names} ({len(report.failed)} of {len(applicable)} applicable checks failed{na_txt})"


def _indented(text: Text) -> Padding:
    return Padding(text, (0, 0, 0, EVIDENCE_INDENT), expand=False)


def check_lines(report: VerifyReport) -> list:
    """One line a check (result, name, title, what it compared), its evidence indented below it: readable
    at any width and when piped, nothing squeezed into a column."""
    out = []
    for c in report.checks:
        head = Text()
        head.append(f"{LABELS.get(c.status, c.status):<4}", style=STYLES.get(c.status, ""))
        head.append(f"  {c.name}: {c.title}", style="bold" if c.status == FAIL else "")
        out.append(head)
        out.append(_indented(Text(f"compared: {fmt_compared(c.compared)}", style="dim")))
        for line in c.evidence:
            out.append(_indented(Text(line, style="" if c.status != NA else "dim")))
    return out


def _tail(text: str, n: int = OUTPUT_LINES) -> str:
    lines = [ln for ln in text.rstrip().splitlines()]
    if len(lines) > n:
        lines = [f"... ({len(lines) - n} earlier lines)"] + lines[-n:]
    return "\n".join(lines)


def render_text(report: VerifyReport, console: Console | None = None, verbose: bool = False) -> None:
    console = console or Console(highlight=False)
    console.print(Text(headline(report), style="bold"))
    for line in check_lines(report):
        console.print(line)
    show_output = verbose or not report.ok
    if show_output and report.output.strip():
        console.print(
            Text("torchrun output" + ("" if verbose else f" (last {OUTPUT_LINES} lines)") + ":", style="bold")
        )
        console.print(Text(report.output.rstrip() if verbose else _tail(report.output)))
    plain = report.plain
    if plain is not None and (verbose or (plain.returncode != 0)):
        console.print(Text(f"plain run: {plain.command}", style="bold"))
        out = (plain.stdout + ("\n" if plain.stdout and plain.stderr else "") + plain.stderr).rstrip()
        if out:
            console.print(Text(out if verbose else _tail(out)))
    if verbose:
        for cmd in report.meta.get("commands") or []:
            console.print(Text(f"command: {cmd}", style="dim"))
        if report.meta.get("run_dir"):
            console.print(Text(f"run folder: {report.meta['run_dir']}", style="dim"))
        ranks = Table(title="ranks", show_lines=False)
        for col in ("rank", "local_rank", "group_rank", "pid", "backend", "state", "steps"):
            ranks.add_column(col)
        for row in report.ranks:
            ranks.add_row(
                *(
                    Text("" if row.get(k) is None else str(row.get(k)))
                    for k in ("rank", "local_rank", "group_rank", "pid", "backend", "state", "steps")
                )
            )
        console.print(ranks)
    elif report.meta.get("run_dir"):
        console.print(Text(f"run folder: {report.meta['run_dir']}", style="dim"))
    console.print(Text(summary(report), style="bold green" if report.ok else "bold red"))


__all__ = ["check_lines", "render_text", "to_json", "summary", "headline"]
