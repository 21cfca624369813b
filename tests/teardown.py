"""One rerun for a run spoiled only at exit.

Rarely, on a loaded machine, a worker that has finished the script aborts while its process exits
(gloo's threads racing the interpreter's teardown: "terminate called without an active exception").
`ddpfix verify` reports it as it is: `completes` fails with the rank in state ``exit_crash``. The
tests take that, and only that, as a reason to run once more; twice in a row is a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

EXIT_STATES = {"finished", "exit_crash", "exit_stopped"}


def crashed_only_at_exit(rank_states: dict) -> bool:
    """`completes`' per-rank states: every rank finished the script, and one crashed afterwards."""
    states = set(rank_states.values())
    return "exit_crash" in states and states <= EXIT_STATES


def report_crashed_only_at_exit(report) -> bool:
    return crashed_only_at_exit(report["completes"].data.get("ranks", {}))


def verify_with_one_rerun(run: Callable[[Path], object], cwd: Path):
    """``run(folder)`` returns a report; rerun in a fresh folder when the first run crashed only at exit."""
    cwd.mkdir(parents=True, exist_ok=True)
    report = run(cwd)
    if report_crashed_only_at_exit(report):
        again = cwd.with_name(cwd.name + "-again")
        again.mkdir()
        report = run(again)
    return report
