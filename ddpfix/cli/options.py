"""The arguments and options the commands share, each with the metavar its help shows."""

from __future__ import annotations

from typing import Annotated

import typer

Paths = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH",
        help="Files or folders ('-' reads standard input). None given: the current folder.",
        show_default=False,
    ),
]
ApplyPaths = Annotated[
    list[str] | None,
    typer.Argument(
        metavar="PATH",
        help="Files or folders to rewrite ('-': standard input to standard output). Required.",
        show_default=False,
    ),
]
Select = Annotated[
    list[str] | None,
    typer.Option(
        "--select", metavar="CODE", help="Only these rule codes or prefixes (repeatable; overrides the config)."
    ),
]
Ignore = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore", metavar="CODE", help="Skip these rule codes or prefixes (repeatable; overrides the config)."
    ),
]
Unsafe = Annotated[
    bool | None,
    typer.Option(
        "--unsafe-fixes/--no-unsafe-fixes",
        help="Also apply fixes that change behaviour (e.g. SyncBatchNorm); default from the config, else off.",
        show_default=False,
    ),
]
Color = Annotated[
    bool | None,
    typer.Option(
        "--color/--no-color",
        help="Colour output (default: on a terminal, unless NO_COLOR is set; FORCE_COLOR turns it on).",
        show_default=False,
    ),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        help="Read settings from this pyproject.toml (or ddpfix.toml) instead of the nearest one.",
    ),
]
Isolated = Annotated[bool, typer.Option("--isolated", help="Ignore every configuration file.")]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        metavar="PATTERN",
        help="Skip paths matching these gitignore-style patterns (repeatable; overrides the config).",
    ),
]
Jobs = Annotated[
    int | None,
    typer.Option(
        "--jobs", "-j", metavar="N", help="Worker processes for many files (default: the number of CPUs).", min=1
    ),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print findings and errors only: no summaries, no progress bar.")
]
Verbose = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Also print the config used, what was skipped and why, per-file timings."),
]
NoCrossFile = Annotated[
    bool | None,
    typer.Option(
        "--cross-file/--no-cross-file",
        help="Let a fix edit the script's own modules too (default from the config, else on); off: the named files only.",
        show_default=False,
    ),
]
StdinName = Annotated[
    str | None,
    typer.Option(
        "--stdin-filename",
        metavar="PATH",
        help="The path to report (and to match config patterns against) for '-'.",
    ),
]


def exit_zero(what: str):
    """`--exit-zero`: exit 0 even when `what` (errors still exit 2)."""
    return Annotated[bool, typer.Option("--exit-zero", help=f"Exit 0 even when {what} (errors still exit 2).")]


def output_format(choices: tuple[str, ...], help: str):
    """`--format`, its choices in the metavar: `--format [text|json]`."""
    return Annotated[str, typer.Option("--format", metavar="[" + "|".join(choices) + "]", help=help)]


__all__ = [
    "ApplyPaths",
    "Color",
    "ConfigOpt",
    "Exclude",
    "Ignore",
    "Isolated",
    "Jobs",
    "Paths",
    "Quiet",
    "Select",
    "StdinName",
    "Unsafe",
    "Verbose",
    "exit_zero",
    "output_format",
]
