"""Reruns for a run spoiled only at exit.

On a loaded machine a worker that has finished the script sometimes aborts while its process exits
("terminate called without an active exception"). The cause is torch's, not the script's: a
`DistributedDataParallel` keeps its gloo process group, and the group's threads, alive after
`destroy_process_group()` (seen with torch 2.13 and 2.14: `pt_gloo_runloop` and `gloo_tcp_loop` still
run after the wrapper is deleted and collected), and those threads race the interpreter's teardown.
`ddpfix verify` reports it as it is: `completes` fails with the rank in state ``exit_crash`` (the
probe's end record says the rank finished the script). The suite sets DDPFIX_PROBE_SKIP_TEARDOWN=1
(conftest.py): once the script has ended, the probe runs the exit handlers, flushes the open files and
leaves without the teardown, which takes the race away for the torchrun runs of the probe; the
reruns below stay for the runs that do not go through it. The tests take that, and only that, as a
reason to run again, at most ``MAX_RERUNS`` (two) times; a crash on the last rerun too is a failure.
Two, not one: the suite runs on one worker per core (pytest-xdist), and with two torchrun jobs on two
cores such a crash came in 5 of about 110 runs, so one rerun alone would fail a whole run about one
time in five on a crash that is no test's. `ddpfix verify` itself and the corpus runner rerun at most
once, and say so. Every
report is kept (:class:`Reruns`) and a warning line says that a rerun happened and why. A plain
``python script.py`` run gets the same treatment (:func:`run_plain`), but only with the same
evidence: the probe's end record (``PlainRun.reached_end``, from ``ddpfix.verify.launcher.run_plain``)
says the script reached its end; a missing traceback proves nothing.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ddpfix.verify.checks.completes import crashed_only_at_exit

MAX_RERUNS = 2


class CrashAtExitRerun(UserWarning):
    """A run was repeated because a rank crashed after finishing the script."""


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


def verify_with_reruns(run: Callable[[Path], object], cwd: Path, label: str = "") -> Reruns:
    """``run(folder)`` returns a report; run again in a fresh folder while a run crashed only at exit.

    Returns every report (``.last`` is the one that counts); each rerun is announced with a
    :class:`CrashAtExitRerun` warning naming the crash."""
    runs = Reruns()
    cwd.mkdir(parents=True, exist_ok=True)
    runs.reports.append(run(cwd))
    folder = cwd
    while report_crashed_only_at_exit(runs.last) and len(runs.reports) <= MAX_RERUNS:
        warnings.warn(warning_line(runs.last, label or str(cwd)), CrashAtExitRerun, stacklevel=2)
        folder = folder.with_name(folder.name + "-again")
        folder.mkdir()
        runs.reports.append(run(folder))
    return runs


def aborted_only_at_exit(done) -> bool:
    """A plain run (a :class:`~ddpfix.verify.checks.PlainRun` or alike) that failed after the script
    reached its end: its exit code is not 0, and the probe's end record says the script finished."""
    return done.returncode not in (0, None) and not getattr(done, "timed_out", False) and done.reached_end


def run_plain(run: Callable[[Path], object], cwd: Path, label: str = ""):
    """``run(folder)`` runs the script plainly and returns a PlainRun; run once more, in a fresh folder,
    when it crashed only while exiting after the script's end. The rerun is announced with a warning."""
    done = run(cwd)
    folder = cwd
    for _ in range(MAX_RERUNS):
        if not aborted_only_at_exit(done):
            break
        tail = (done.stderr or "").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        warnings.warn(
            f"{label or cwd}: the script reached its end, then its process crashed while exiting "
            f"({tail[0][:200]}); running once more",
            CrashAtExitRerun,
            stacklevel=2,
        )
        folder = folder.with_name(folder.name + "-again")
        done = run(folder)
    return done
