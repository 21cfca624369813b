"""`ddpfix diff` and `ddpfix apply` (with `--interactive`): the commands that fix."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.syntax import Syntax

from ..engine import STDIN, FileResult, write_atomic
from ..errors import DdpfixError
from .options import Color, ConfigOpt, Exclude, Ignore, Isolated, Jobs, Paths, Quiet, Select, StdinName, Unsafe, Verbose
from .output import console, fail, note, summary, withheld_summary
from .run import Run, discovered, start
from .verified import Force, Nproc, Timeout, VerifyFlag, apply_verified, diff_verified


def diff(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    unsafe_fixes: Unsafe = None,
    color: Color = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when there are changes (errors still exit 2).")
    ] = False,
    verify: VerifyFlag = False,
    nproc: Nproc = 2,
    timeout: Timeout = 300.0,
) -> None:
    """Print the unified diff `apply` would make, with the same flags (exit 1 when it would change
    something or withhold a fix). With --verify, also run the rewrite and print the verdict (exit 1
    when a check failed)."""
    run = start(
        select=select,
        ignore=ignore,
        unsafe_fixes=unsafe_fixes,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
    )
    if verify:
        raise typer.Exit(diff_verified(run, paths, color=color, exit_zero=exit_zero, nproc=nproc, timeout=timeout))
    results = discovered(run, paths, fix=True, keep="diff")
    out, err = console(color), console(color, stderr=True)
    changed = withheld = False
    for res in results:
        if res.result is None or not (res.result.diff or res.result.withheld):
            continue
        changed = changed or bool(res.result.diff)
        withheld = withheld or bool(res.result.withheld)
        if res.result.diff:
            out.print(Syntax(res.result.diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
        if not run.quiet:
            err.print(summary(res), markup=False)
    raise typer.Exit(2 if run.errors else (1 if (changed or withheld) and not exit_zero else 0))


def apply(
    paths: Paths = None,
    select: Select = None,
    ignore: Ignore = None,
    unsafe_fixes: Unsafe = None,
    interactive: Annotated[
        bool, typer.Option("--interactive", "-i", help="Choose hunk by hunk (y/n/a/d/q), like `git add -p`.")
    ] = False,
    color: Color = None,
    config: ConfigOpt = None,
    isolated: Isolated = False,
    exclude: Exclude = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    verbose: Verbose = False,
    stdin_filename: StdinName = None,
    verify: VerifyFlag = False,
    force: Force = False,
    nproc: Nproc = 2,
    timeout: Timeout = 300.0,
) -> None:
    """Rewrite files in place (atomically) with the safe fixes; '-' writes the fixed source to standard output.

    Exit 1 when the output guard withheld a fix (the summary line says which and why), 2 on errors.
    With --verify, the rewrite is written only when it passes `ddpfix verify` (exit 1 otherwise):
    ddpfix apply --verify train.py -- --epochs 1"""
    if interactive and paths and STDIN in paths:
        fail("--interactive reads answers from standard input; it cannot also read the source from '-'")
        raise typer.Exit(2) from None
    if interactive and verify:
        fail("--interactive and --verify cannot be combined: verify the whole rewrite, or choose hunks")
        raise typer.Exit(2) from None
    if force and not verify:
        fail("--force only applies with --verify")
        raise typer.Exit(2) from None
    run = start(
        select=select,
        ignore=ignore,
        unsafe_fixes=unsafe_fixes,
        config=config,
        isolated=isolated,
        exclude=exclude,
        jobs=jobs,
        quiet=quiet,
        verbose=verbose,
        stdin_filename=stdin_filename,
    )
    if verify:
        raise typer.Exit(apply_verified(run, paths, force=force, nproc=nproc, timeout=timeout))
    results = discovered(run, paths, fix=True, keep="all")
    withheld = any(res.result is not None and res.result.withheld for res in results)
    if interactive:
        _interactive(run, results, color)
        raise typer.Exit(2 if run.errors else (1 if withheld else 0))
    for res in results:
        if res.result is None:
            continue
        if res.stdin:
            _stdout(res)
            if res.result.withheld and not run.quiet:
                note(summary(res, " applied"))
            continue
        if res.result.changed:
            try:
                write_atomic(res.path, res.result.data or res.result.code.encode(), expected=res.original)
            except DdpfixError as exc:
                run.error(str(exc))
                continue
        if not run.quiet and (res.result.changed or res.result.withheld):
            note(summary(res, " applied"))
    raise typer.Exit(2 if run.errors else (1 if withheld else 0))


def _stdout(res: FileResult) -> None:
    assert res.result is not None
    sys.stdout.buffer.write(res.result.data if res.result.data is not None else res.result.code.encode())
    sys.stdout.buffer.flush()


def _interactive(run: Run, results: list[FileResult], color: bool | None) -> None:
    from ..interactive import FilePlan, walk

    out = console(color)
    plans = []
    for res in results:
        if res.result is not None and res.result.withheld and not run.quiet:
            note(f"{res.path}: {withheld_summary(res.result.withheld)}")
        if res.result is None or not res.result.changed or res.original is None or res.stdin:
            continue
        opts = run.options(res.path)
        plans.append(
            FilePlan(
                res.path,
                res.original,
                res.result,
                select=opts.select,
                ignore=opts.ignore,
                unsafe_fixes=opts.unsafe_fixes,
            )
        )

    def ask(prompt: str) -> str | None:
        typer.echo(prompt, nl=False)
        line = sys.stdin.readline()
        return line if line else None

    def show(hunk: str) -> None:
        out.print(Syntax(hunk.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))

    outcomes = walk(plans, ask, lambda text: out.print(text, markup=False, highlight=False), show)
    originals = {res.path: res.original for res in results}
    for o in outcomes:
        if o.data is None:
            if not run.quiet and o.text is None and o.chosen:
                note(f"{o.path}: not rewritten")
            continue
        try:
            write_atomic(o.path, o.data, expected=originals.get(o.path))
        except DdpfixError as exc:
            run.error(str(exc))
            continue
        if not run.quiet:
            note(f"{o.path}: {len(o.chosen)} of {o.total} hunk(s) applied")


__all__ = ["apply", "diff"]
