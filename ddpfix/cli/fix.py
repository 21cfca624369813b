"""`ddpfix diff` and `ddpfix apply` (with `--interactive`): the commands that fix."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer
from rich.syntax import Syntax

from ..engine import STDIN, FileResult
from ..errors import DdpfixError
from ..writing import Write, write_all
from .interactive import interactive_apply
from .options import (
    ApplyPaths,
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
    Unsafe,
    Verbose,
    exit_zero,
)
from .output import (
    console,
    fail,
    incomplete_lines,
    left_lines,
    module_summary,
    next_step,
    note,
    summary,
)
from .run import Run, discovered, start
from .verified import Force, Nproc, Timeout, VerifyFlag, apply_verified, diff_verified

DiffExitZero = exit_zero("there are changes or a withheld fix")
ApplyExitZero = exit_zero("a fix was withheld")


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
    cross_file: NoCrossFile = None,
    zero: DiffExitZero = False,
    verify: VerifyFlag = False,
    nproc: Nproc = 2,
    timeout: Timeout = 300.0,
) -> None:
    """Print the unified diff `apply` would make, with the same flags; no PATH: the current folder.

    One diff per script, over every file its fix changes (the script, then its own modules). Exit 1
    when it would change something or withhold a fix (0 with --exit-zero), 2 on errors. With --verify,
    also run the rewrite and print the verdict (exit 1 when a check failed)."""
    run = start(
        cross_file=cross_file,
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
        raise typer.Exit(diff_verified(run, paths, color=color, exit_zero=zero, nproc=nproc, timeout=timeout))
    results = discovered(run, paths or ["."], fix=True, keep="diff")
    out, err = console(color), console(color, stderr=True)
    changed = withheld = False
    for res in results:
        r = res.result
        if r is None or not (r.full_diff or r.withheld or r.incomplete or _left(r)):
            continue
        changed = changed or bool(r.full_diff)
        withheld = withheld or bool(r.withheld) or bool(r.incomplete)
        if r.full_diff:
            out.print(Syntax(r.full_diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default"))
        if not run.quiet:
            err.print(summary(res, unsafe_fixes=run.options(res.path).unsafe_fixes), markup=False)
            for change in r.others.values():
                err.print(module_summary(change, res.path), markup=False)
            for line in incomplete_lines(res):
                err.print(line, markup=False)
    raise typer.Exit(2 if run.errors else (1 if (changed or withheld) and not zero else 0))


def apply(
    paths: ApplyPaths = None,
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
    cross_file: NoCrossFile = None,
    zero: ApplyExitZero = False,
    verify: VerifyFlag = False,
    force: Force = False,
    nproc: Nproc = 2,
    timeout: Timeout = 300.0,
) -> None:
    """Rewrite files in place (atomically) with the safe fixes; '-' writes the fixed source to standard output.

    A fix that also edits the script's own modules writes all of its files or none (--no-cross-file:
    the named files only); --interactive walks the hunks of each of them, and a chosen hunk that
    passes a module's new parameter brings the module's hunk that adds it. With --verify, the rewrite is
    written only when it passes `ddpfix verify` (exit 1 otherwise): ddpfix apply --verify train.py --
    --epochs 1.

    Exit 1 when the output guard withheld a fix (the summary line says which and why) or the result is
    not yet a correct DDP script (an `incomplete:` line says what and where); 0 with --exit-zero; 2 on
    errors. Then `ddpfix verify` runs the result under torchrun."""
    if not paths and not verify:  # (--verify says what it needs itself)
        fail("apply rewrites files in place: name them (use '.' for the current folder, '-' for standard input)")
        raise typer.Exit(2)
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
        cross_file=cross_file,
    )
    if verify:
        raise typer.Exit(apply_verified(run, paths, force=force, nproc=nproc, timeout=timeout))
    results = discovered(run, paths, fix=True, keep="all")
    withheld = (
        any(res.result is not None and (res.result.withheld or res.result.incomplete) for res in results) and not zero
    )
    if interactive:
        written = interactive_apply(run, results, color)
    else:
        modules: dict[str, tuple[str, bytes]] = {}
        written = [res.path for res in results if _apply_one(run, res, modules)]
    if written and not run.quiet:
        incomplete = any(res.result is not None and res.result.incomplete for res in results if res.path in written)
        note(next_step(written, incomplete))
    raise typer.Exit(2 if run.errors else (1 if withheld else 0))


def _apply_one(run: Run, res: FileResult, modules: dict[str, tuple[str, bytes]]) -> bool:
    """Write one script's result, with the modules its fix edits, all or none (or print it, for standard
    input), and its summaries; True when files were rewritten. `modules`: the modules written so far in
    this run (real path -> the script that edited it, the bytes written): two scripts may share one."""
    if res.result is None:
        return False
    unsafe = run.options(res.path).unsafe_fixes
    if res.stdin:
        _stdout(res)
        if (res.result.withheld or res.result.incomplete) and not run.quiet:
            note(summary(res, " applied", unsafe_fixes=unsafe))
            for line in incomplete_lines(res):
                note(line)
        return False
    writes = []
    if res.result.changed:
        writes.append(Write(res.path, res.result.data or res.result.code.encode(), res.original))
    for change in res.result.others.values():
        real = os.path.realpath(change.path)
        if real in modules:
            by, data = modules[real]
            if data != change.data:
                run.error(
                    f"{change.path}: the fix of {res.path} edits it otherwise than that of {by}; apply them one at a time"
                )
                return False
            continue
        writes.append(Write(change.path, change.data, change.original))
    try:
        write_all(writes)
    except DdpfixError as exc:
        run.error(str(exc))
        return False
    mine = [c for c in res.result.others.values() if os.path.realpath(c.path) not in modules]
    modules.update({os.path.realpath(c.path): (res.path, c.data) for c in mine})
    if not run.quiet and (
        res.result.changed_files or res.result.withheld or res.result.incomplete or _left(res.result)
    ):
        note(summary(res, " applied", unsafe_fixes=unsafe))
        for change in mine:
            note(module_summary(change, res.path, " applied"))
        for line in incomplete_lines(res) + left_lines(res, unsafe):
            note(line)
    return res.result.changed_files


def _left(result) -> bool:
    """Does the result keep a finding the run did not fix? Its summary says why, even with no edit."""
    return any(not d.info and not d.applied for d in result.diagnostics)


def _stdout(res: FileResult) -> None:
    assert res.result is not None
    sys.stdout.buffer.write(res.result.data if res.result.data is not None else res.result.code.encode())
    sys.stdout.buffer.flush()


__all__ = ["apply", "diff"]
