"""The Typer app behind `ddpfix`: its commands, in the order `--help` lists them, and `--version`."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__
from ..verify.command import CONTEXT_SETTINGS as VERIFY_CONTEXT
from ..verify.command import verify
from .check import check
from .fix import apply, diff
from .rules import explain_cmd, rules

app = typer.Typer(
    name="ddpfix",
    help="Turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def lsp() -> None:
    """Run the language server over stdio (editor setup: docs/ide.md)."""
    from ..lsp import main as serve

    serve()


app.command()(diff)
app.command()(apply)
app.command()(check)
app.command()(rules)
app.command("explain")(explain_cmd)
app.command("verify", context_settings=VERIFY_CONTEXT)(verify)
app.command()(lsp)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ddpfix {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """ddpfix: DDP conversion and checks for PyTorch training scripts."""


def main() -> None:
    app()


__all__ = ["app", "main"]
