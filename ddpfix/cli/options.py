"""The arguments and options the file commands (`diff`, `apply`, `check`) share."""

from __future__ import annotations

from typing import Annotated

import typer

Paths = Annotated[
    list[str] | None,
    typer.Argument(help="Files or folders ('-' reads standard input). None given: nothing to do.", show_default=False),
]
Select = Annotated[
    list[str] | None,
    typer.Option("--select", help="Only these rule codes or prefixes (repeatable; overrides the config)."),
]
Ignore = Annotated[
    list[str] | None,
    typer.Option("--ignore", help="Skip these rule codes or prefixes (repeatable; overrides the config)."),
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
    typer.Option("--color/--no-color", help="Colour output (default: only on a terminal).", show_default=False),
]
ConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--config", help="Read settings from this pyproject.toml (or ddpfix.toml) instead of the nearest one."
    ),
]
Isolated = Annotated[bool, typer.Option("--isolated", help="Ignore every configuration file.")]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude", help="Skip paths matching these gitignore-style patterns (repeatable; overrides the config)."
    ),
]
Jobs = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes for many files (default: the number of CPUs).", min=1),
]
Quiet = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print findings and errors only: no summaries, no progress bar.")
]
Verbose = Annotated[
    bool, typer.Option("--verbose", "-v", help="Also print the config used, skipped paths and per-file timings.")
]
StdinName = Annotated[
    str | None,
    typer.Option("--stdin-filename", help="The path to report (and to match config patterns against) for '-'."),
]

__all__ = [
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
]
