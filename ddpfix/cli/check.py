"""`ddpfix check`: the findings as text, JSON, SARIF or GitHub annotations."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.text import Text

from ..diagnostic import Diagnostic
from ..formats import FORMATS, to_github, to_json, to_sarif
from .options import (
    Color,
    ConfigOpt,
    Exclude,
    Ignore,
    Isolated,
    Jobs,
    NoCrossFile,
    Paths,
    Quiet,
    Select,
    StdinName,
    Verbose,
    exit_zero,
    output_format,
)
from .output import colored, console, fail, known_format, note
from .run import discovered, start

Format = output_format(FORMATS, "text, json (with each fix's edits), sarif (2.1.0) or github (workflow annotations).")
CheckExitZero = exit_zero("there are findings")


def check(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    output_format: Format = "text",
    output_file: Annotated[
        str | None,
        typer.Option(
            "--output-file", "-o", metavar="FILE", help="Write the report to this file instead of standard output."
        ),
    ] = None,
    color: Color = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
    cross_file: NoCrossFile = None,
    zero: CheckExitZero = False,
) -> None:
    """Report what is wrong as `path:line:col: CODE message`; no PATH: the current folder.

    Exit 1 on findings (0 with --exit-zero), 2 on errors."""
    known_format(output_format, FORMATS)
    run = start(
        select=select,
        ignore=ignore,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
        cross_file=cross_file,
    )
    results = discovered(run, paths or ["."], fix=False, keep="diagnostics", fixes=output_format in ("json", "sarif"))
    diagnostics = [(res, d) for res in results if res.result is not None for d in res.result.diagnostics]
    if output_format == "json":
        report = to_json(results) + "\n"
    elif output_format == "sarif":
        import json

        report = json.dumps(to_sarif(results, run.errors), indent=2, ensure_ascii=False) + "\n"
    elif output_format == "github":
        report = "".join(line + "\n" for line in to_github(results))
    else:
        report = "".join(d.format(res.path) + "\n" for res, d in diagnostics)
    if output_file:
        try:
            with open(output_file, "w", encoding="utf-8") as f:
                f.write(report)
        except OSError as exc:
            fail(f"{output_file}: cannot write: {exc.strerror or exc}")
            raise typer.Exit(2) from None
    elif output_format == "text" and colored(out := console(color)):
        for res, d in diagnostics:
            out.print(_styled(d, res.path))
    else:
        sys.stdout.write(report)
        sys.stdout.flush()
    problems = [d for _, d in diagnostics if not d.info]
    notes = len(diagnostics) - len(problems)
    if diagnostics and not run.quiet and (output_format == "text" or output_file):
        safe = sum(1 for d in problems if d.fix == "safe")
        unsafe = sum(1 for d in problems if d.fix == "unsafe")
        parts = []
        if problems:
            counted = f"{len(problems)} problem(s) ({safe} fixable with `ddpfix apply`"
            parts.append(counted + (f", {unsafe} more with `--unsafe-fixes`)" if unsafe else ")"))
        if notes:
            parts.append(f"{notes} note(s)")
        note("Found " + " and ".join(parts) + ".")
    raise typer.Exit(2 if run.errors else (1 if problems and not zero else 0))


def _styled(d: Diagnostic, path: str) -> Text:
    """A finding's line with its place in bold and its code in red, as ruff colours them."""
    line = d.format(path)
    place = f"{path}:{d.line}:{d.col}:"
    text = Text()
    text.append(place, style="bold")
    text.append(" ")
    text.append(d.code, style="bold red")
    text.append(line[len(place) + 1 + len(d.code) :])
    return text


__all__ = ["check"]
