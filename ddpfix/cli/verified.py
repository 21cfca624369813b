"""`apply --verify` and `diff --verify`: rewrite, prove the rewrite under torchrun in a copy of the
script's folder (ddpfix.verified), then write it (apply) or show it (diff) with the verdict."""

from __future__ import annotations

import os
from typing import Annotated

import typer
from rich.syntax import Syntax

from ..engine import STDIN
from ..errors import DdpfixError
from .output import console, fail, note, summary
from .run import Run, discovered

VerifyFlag = Annotated[
    bool,
    typer.Option(
        "--verify",
        help="Prove the rewrite first: run it under torchrun in a temporary copy of the script's folder "
        "(`ddpfix verify`); PATH is one script, and what follows `--` goes to it.",
    ),
]
Force = Annotated[bool, typer.Option("--force", help="With --verify: write the rewrite even when a check failed.")]
Nproc = Annotated[int, typer.Option("--nproc", min=1, help="With --verify: processes to run (default 2).")]
Timeout = Annotated[
    float, typer.Option("--timeout", min=1, help="With --verify: seconds before the run is declared hung.")
]


def script_and_args(paths: list[str] | None) -> tuple[str, list[str]]:
    """`--verify` takes one script; the rest of the arguments (after `--`) are the script's."""
    if not paths:
        fail("--verify needs the script to run: ddpfix apply --verify train.py -- ARGS")
        raise typer.Exit(2)
    if paths[0] == STDIN:
        fail("--verify runs the script from its folder; it cannot read the source from '-'")
        raise typer.Exit(2)
    if os.path.isdir(paths[0]):
        fail(f"{paths[0]}: is a directory; --verify takes one script")
        raise typer.Exit(2)
    return paths[0], list(paths[1:])


def verified(run: Run, paths, *, write: bool, force: bool, nproc: int, timeout: float):
    """Rewrite and verify the script of `paths`; None (after an error line) when there is nothing to judge."""
    from ..verified import fix_and_verify
    from ..verify import VerifyUsageError

    script, args = script_and_args(paths)
    results = discovered(run, [script], fix=True, keep="all")
    if run.errors or not results or results[0].result is None:
        if not run.errors:
            run.error(f"{script}: not a Python file to verify")
        return None, None
    res = results[0]
    try:
        outcome = fix_and_verify(
            res.path,
            args,
            source=res.original,
            result=res.result,
            nproc=nproc,
            timeout=timeout,
            write=write,
            force=force,
        )
    except (DdpfixError, VerifyUsageError) as exc:
        run.error(str(exc))
        return res, None
    except KeyboardInterrupt:
        run.error("interrupted; every process of the run was stopped and the file left as it was")
        raise typer.Exit(130) from None
    except OSError as exc:
        run.error(f"could not run torchrun: {exc}")
        return res, None
    return res, outcome


def _verdict(res, outcome, written_verb: str) -> None:
    if not outcome.ok:
        for line in outcome.failures:
            note(line)
    head = summary(res, written_verb) if res.result.changed else f"{res.path}: unchanged"
    note(f"{head}; {outcome.summary}")


def apply_verified(run: Run, paths, *, force: bool, nproc: int, timeout: float) -> int:
    """`apply --verify`: the exit code (0 proven and written, 1 a check failed or a fix was withheld, 2 errors)."""
    res, outcome = verified(run, paths, write=True, force=force, nproc=nproc, timeout=timeout)
    if outcome is None:
        return 2
    _verdict(res, outcome, " applied" if outcome.written else "")
    if res.result.changed_files and not outcome.written:
        note(f"{res.path}: not rewritten: a check failed on the rewrite (--force writes it anyway)")
    elif outcome.written and not outcome.ok:
        note(f"{res.path}: rewritten although a check failed (--force)")
    return 1 if (not outcome.ok or res.result.withheld) else 0


def diff_verified(run: Run, paths, *, color, exit_zero: bool, nproc: int, timeout: float) -> int:
    """`diff --verify`: the diff, then the verdict on it; nothing is written."""
    res, outcome = verified(run, paths, write=False, force=False, nproc=nproc, timeout=timeout)
    if outcome is None:
        return 2
    if res.result.full_diff:  # the script, then the modules its fix edits
        console(color).print(
            Syntax(res.result.full_diff.rstrip("\n"), "diff", theme="ansi_dark", background_color="default")
        )
    _verdict(res, outcome, "")
    changed = bool(res.result.full_diff) and not exit_zero
    return 1 if (not outcome.ok or res.result.withheld or changed) else 0


__all__ = ["Force", "Nproc", "Timeout", "VerifyFlag", "apply_verified", "diff_verified", "script_and_args"]
