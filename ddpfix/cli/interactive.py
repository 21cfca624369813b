"""`ddpfix apply --interactive`: walk the hunks of every file each script's fix changes, then write
what was chosen, each script's files all or none."""

from __future__ import annotations

import os
import sys

import typer
from rich.syntax import Syntax

from ..engine import FileResult
from ..errors import DdpfixError
from ..writing import Write, write_all
from .output import console, note, withheld_summary
from .run import Run


def interactive_apply(run: Run, results: list[FileResult], color: bool | None) -> list[str]:
    """Walk the hunks with the user and write what they chose; the paths rewritten."""
    from ..interactive_files import project_plans, walk

    out = console(color)
    plans = []
    taken: dict[str, str] = {}  # real path of a file walked -> the script whose fix changes it
    for res in results:
        if res.result is not None and res.result.withheld and not run.quiet:
            note(f"{res.path}: {withheld_summary(res.result.withheld)}")
        if res.result is None or not res.result.changed_files or res.original is None or res.stdin:
            continue
        files = [res.path, *(c.path for c in res.result.others.values())]
        clash = next((f for f in files if os.path.realpath(f) in taken), None)
        if clash is not None:
            by = taken[os.path.realpath(clash)]
            run.error(f"{clash}: the fix of {res.path} edits it, as does that of {by}; apply -i them one at a time")
            continue
        taken.update({os.path.realpath(f): res.path for f in files})
        opts = run.options(res.path)
        plans += project_plans(
            res.path,
            res.original,
            res.result,
            select=opts.select,
            ignore=opts.ignore,
            unsafe_fixes=opts.unsafe_fixes,
            cross_file=opts.cross_file,
        )

    def ask(prompt: str) -> str | None:
        typer.echo(prompt, nl=False)
        line = sys.stdin.readline()
        return line if line else None

    def show(hunk: str) -> None:
        out.print(Syntax(hunk.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))

    outcomes = walk(plans, ask, lambda text: out.print(text, markup=False, highlight=False), show)
    written = []
    for script in dict.fromkeys(o.script for o in outcomes):
        group = [o for o in outcomes if o.script == script]
        writes = [Write(o.path, o.data, o.original) for o in group if o.data is not None]
        if not run.quiet:
            for o in group:
                if o.text is None and o.chosen:
                    note(f"{o.path}: not rewritten")
        if not writes:
            continue
        try:
            write_all(writes)
        except DdpfixError as exc:
            run.error(str(exc))
            continue
        for o in group:
            if o.data is None:
                continue
            written.append(o.path)
            if not run.quiet:
                edited = f"; edited for {script}" if o.path != script else ""
                note(f"{o.path}: {len(o.chosen)} of {o.total} hunk(s) applied{edited}")
    return written


__all__ = ["interactive_apply"]
