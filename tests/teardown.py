"""One rerun for a run spoiled only at exit.

Rarely, on a loaded machine, a worker that has finished the script aborts while its process exits
(gloo's threads racing the interpreter's teardown: "terminate called without an active exception").
`ddpfix verify` reports it as it is: `completes` fails with the rank in state ``exit_crash``. The
tests take that, and only that, as a reason to run once more; twice in a row is a failure. Both
reports are kept (:class:`Reruns`) and a warning line says that the rerun happened and why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EXIT_STATES = {"finished", "exit_crash", "exit_stopped"}


class CrashAtExitRerun(UserWarning):
    """A run was repeated because a rank crashed after finishing the script."""


def crashed_only_at_exit(rank_states: dict) -> bool:
    """`completes`' per-rank states: every rank finished the script, and one crashed afterwards."""
    states = set(rank_states.values())
    return "exit_crash" in states and states <= EXIT_STATES


def report_crashed_only_at_exit(report) -> bool:
    return crashed_only_at_exit(report["completes"].data.get("ranks", {}))


@dataclass
class Reruns:
    """Every report of one verification: the one that counts (``last``) and those rerun over."""

    reports: list = field(default_factory=list)

    @property
    def last(self):
        return self.reports[-1]

    @property
    def first(self):
        return self.reports[0]

    def describe(self) -> str:
        """The reports rerun over, for a failure message."""
        lines = []
        for n, report in enumerate(self.reports[:-1], 1):
            lines.append(f"run {n} (rerun after a crash at exit): " + "; ".join(report["completes"].evidence))
        return "\n".join(lines)


def warning_line(report, label: str) -> str:
    ev = report["completes"].evidence
    return f"{label}: a rank crashed while exiting after finishing the script; running once more ({ev[0]})"


def verify_with_one_rerun(run: Callable[[Path], object], cwd: Path, label: str = "") -> Reruns:
    """``run(folder)`` returns a report; rerun in a fresh folder when the first run crashed only at exit.

    Returns every report (``.last`` is the one that counts); a rerun is announced with a
    :class:`CrashAtExitRerun` warning naming the crash."""
    runs = Reruns()
    cwd.mkdir(parents=True, exist_ok=True)
    runs.reports.append(run(cwd))
    if report_crashed_only_at_exit(runs.last):
        warnings.warn(warning_line(runs.last, label or str(cwd)), CrashAtExitRerun, stacklevel=2)
        again = cwd.with_name(cwd.name + "-again")
        again.mkdir()
        runs.reports.append(run(again))
    return runs
