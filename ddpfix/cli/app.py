"""The Typer app behind `ddpfix`: its commands, in the order `--help` lists them, and `--version`."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import __version__
from ..verify.command import CONTEXT_SETTINGS as VERIFY_CONTEXT
from ..verify.command import verify
from .check import check
from .fix import apply, diff
from .help import Command, Group
from .rules import explain_cmd, rules

app = typer.Typer(
    name="ddpfix",
    cls=Group,
    help="Turn single-GPU PyTorch training scripts into correct DistributedDataParallel scripts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def lsp() -> None:
    """Run the language server over stdio (editor setup: docs/ide.md)."""
    from ..lsp import main as serve

    serve()


COMMANDS = (  # name, function, the one line `ddpfix --help` shows
    ("diff", diff, "Show what `apply` would change, as a unified diff."),
    ("apply", apply, "Rewrite files in place with the safe fixes."),
    ("check", check, "Report what is wrong, one line per finding."),
    ("rules", rules, "List the rules, or show one."),
    ("explain", explain_cmd, "Name the rules behind an error message or log."),
    ("verify", verify, "Run a script under torchrun and check it is correct DDP."),
    ("lsp", lsp, "Run the language server for editors."),
)
for _name, _function, _short in COMMANDS:
    _settings = VERIFY_CONTEXT if _name == "verify" else None
    app.command(_name, cls=Command, short_help=_short, context_settings=_settings)(_function)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ddpfix {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Show the version and exit.")
    ] = False,
) -> None:
    """ddpfix: DDP conversion and checks for PyTorch training scripts."""


def main() -> None:
    app()


__all__ = ["app", "main"]
