"""The `ddpfix` command: argument parsing, printing and exit codes over the Python API.

app.py      the Typer app: its commands in order, `--version`, `main()`
fix.py      `diff` and `apply` (with `--interactive`)
check.py    `check` and its report formats
rules.py    `rules` and `explain`
run.py      what every file command shares: settings, discovery, the worker pool, progress, errors
options.py  the options the file commands share
output.py   consoles, colour (--color, NO_COLOR, FORCE_COLOR), messages and the per-file summary lines
help.py     `--help` with metavars a person reads, within 80 columns
"""

from ..engine import read
from .app import app, main

__all__ = ["app", "main", "read"]
