"""Fixes computed ahead, in idle time, so that listing code actions never waits for one.

What a code action's title and availability depend on is the result of a fix: whether the output
guard withholds it (the quick-fix is then disabled, with the reason), which of the script's own
modules it edits too, what a conversion leaves incomplete, the names in DDP204's title. A fix of a
1,000-line script takes a few hundred milliseconds, so the listing only reads what is known
(`Analysis.fixes`) and the fixes are computed here, once the diagnostics of a version are out and the
user has stopped typing (`DdpfixServer.fix_delay`), or at once for the findings a listing was
explicitly asked about.

A `Job` computes one document version's fixes, one at a time, in one daemon worker thread, for every
document. A newer version cancels the job: the fix under way runs to its end (its result is kept on
the old analysis, which nothing reads any more) and no further one starts. The engine runs hold
`analysis.ENGINE`, so the worker and the server's own analysis never run at once; what the worker
learns (a withheld fix) is handed to the event loop, which publishes the diagnostics again.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable

from ..diagnostic import SAFE, UNSAFE, Diagnostic
from .analysis import Analysis, FixKey

log = logging.getLogger(__name__)


def quick_fix_key(d: Diagnostic) -> FixKey | None:
    """The fix a finding's quick-fix applies: its rule alone, unsafe when its fix is; None: no fix."""
    if d.fix not in (SAFE, UNSAFE):
        return None
    return (d.code,), d.fix == UNSAFE


def convert_keys(a: Analysis) -> list[FixKey]:
    """The whole conversions offered for these findings: safe (also fix-all) and with unsafe fixes."""
    out: list[FixKey] = []
    if any(d.fix == SAFE for d in a.diagnostics):
        out.append((None, False))
    if any(d.fix == UNSAFE for d in a.diagnostics):
        out.append((None, True))
    return out


def keys_for(a: Analysis) -> list[FixKey]:
    """Every fix the code actions of this analysis can show: the quick-fixes in document order, then
    the conversions; those known already are left out."""
    out: list[FixKey] = []
    for d in a.diagnostics:
        key = quick_fix_key(d)
        if key is not None and key not in out:
            out.append(key)
    out += convert_keys(a)
    return [k for k in out if k not in a.fixes]


class Job:
    """The fixes still to compute for one analysis (one document version), and whether it is over."""

    def __init__(self, analysis: Analysis, keys: Iterable[FixKey], owner: object = None) -> None:
        self.analysis = analysis
        self.owner = owner  # the document
        self.keys: deque[FixKey] = deque(keys)
        self.cancelled = threading.Event()
        self.finished = threading.Event()
        self.computed: list[FixKey] = []  # in the order the worker computed them

    def cancel(self) -> None:
        self.cancelled.set()

    @property
    def active(self) -> bool:
        return not (self.cancelled.is_set() or self.finished.is_set())

    def prefer(self, keys: Iterable[FixKey]) -> None:
        """Compute these next (those still waiting; one under way or done is left as it is)."""
        for key in reversed(list(keys)):
            try:
                self.keys.remove(key)
            except ValueError:  # taken by the worker meanwhile, or never queued
                continue
            self.keys.appendleft(key)

    def run(self, notify: Callable[["Job", FixKey | None], None]) -> None:
        """Compute the fixes in order until none is left or the job is cancelled; `notify(job, key)`
        after each fix computed, `notify(job, None)` at the end (from the worker thread)."""
        a = self.analysis
        try:
            while not self.cancelled.is_set():
                try:
                    key = self.keys.popleft()
                except IndexError:
                    break
                if key in a.fixes:
                    continue
                a.fixed(*key, stop=self.cancelled.is_set)
                if key in a.fixes:
                    self.computed.append(key)
                    notify(self, key)
        except Exception:  # pragma: no cover - Analysis.fixed catches the engine's errors
            log.exception("computing fixes ahead")
        finally:
            self.finished.set()
            notify(self, None)


class Worker:
    """One daemon thread running jobs in the order they come (started with the first job)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, job: Job, notify: Callable[[Job, FixKey | None], None]) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="ddpfix-fixes", daemon=True)
            self._thread.start()
        self._queue.put((job, notify))

    def _serve(self) -> None:
        while True:
            job, notify = self._queue.get()
            job.run(notify)


__all__ = ["Job", "Worker", "convert_keys", "keys_for", "quick_fix_key"]
