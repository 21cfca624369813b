"""The ``ddpfix verify`` command (typer).

Registered in the main app with::

    from ddpfix.verify.command import verify
    app.command("verify", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(verify)

Arguments after ``--`` (and unknown options) are passed to the script: they arrive in ``ctx.args``.
Exit codes: 0 when every applicable check passes, 1 when a check fails, 2 for usage or input errors.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from . import DEFAULT_TIMEOUT, VerifyUsageError, verify_script

CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}


class Backend(str, Enum):
    auto = "auto"
    gloo = "gloo"
    nccl = "nccl"


class Format(str, Enum):
    text = "text"
    json = "json"


def _error(message: str) -> None:
    typer.echo(f"ddpfix verify: error: {message}", err=True)


def verify(
    ctx: typer.Context,
    script: Annotated[str, typer.Argument(help="Training script to run under torchrun.", show_default=False)],
    nproc: Annotated[
        int | None,
        typer.Option("--nproc", help="Processes per node (default 2; 1 with --nnodes > 1).", show_default=False),
    ] = None,
    nnodes: Annotated[
        int, typer.Option("--nnodes", help="Simulated nodes on this host (one torchrun agent each).")
    ] = 1,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds before the run is declared hung, dumped and killed.")
    ] = DEFAULT_TIMEOUT,
    backend: Annotated[
        Backend,
        typer.Option(
            "--backend",
            case_sensitive=False,
            help="auto: keep the script's backend; gloo/nccl: force it in init_process_group.",
        ),
    ] = Backend.auto,
    single: Annotated[
        bool, typer.Option("--single", help="Also run `python SCRIPT ARGS` as a plain single process.")
    ] = False,
    fmt: Annotated[Format, typer.Option("--format", case_sensitive=False, help="Report format.")] = Format.text,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show torchrun's output and rank details.")] = False,
    keep_run_dir: Annotated[
        bool, typer.Option("--keep-run-dir", help="Keep the folder with the per-rank traces.")
    ] = False,
) -> None:
    """Run SCRIPT on several processes with torchrun and check, at run time, that it is correct DDP.

    Pass the script's own arguments after `--`:  ddpfix verify train.py --nproc 2 -- --epochs 1
    """
    args = list(ctx.args)
    try:
        report = verify_script(
            script,
            args,
            nproc=nproc,
            nnodes=nnodes,
            timeout=timeout,
            backend=backend.value,
            single=single,
            keep_run_dir=keep_run_dir,
        )
    except VerifyUsageError as exc:
        _error(str(exc))
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        _error("interrupted; every process of the run was stopped")
        raise typer.Exit(130) from None
    except OSError as exc:
        _error(f"could not run torchrun: {exc}")
        raise typer.Exit(2) from None
    if fmt is Format.json:
        from .report import to_json

        sys.stdout.write(to_json(report) + "\n")
        sys.stdout.flush()
    else:
        from .report import render_text

        render_text(report, verbose=verbose)
    raise typer.Exit(0 if report.ok else 1)


def make_app() -> typer.Typer:
    """A one-command app, for ``python -m ddpfix.verify``."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command("verify", context_settings=CONTEXT_SETTINGS)(verify)
    return app


def main() -> None:
    make_app()(prog_name="python -m ddpfix.verify")
