"""What every file command shares: settings, discovery, the worker pool, progress, error messages."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from ..config import Overrides, Resolver, check_codes, effective, is_excluded
from ..engine import STDIN, FileResult, Options, Task, discover, run_many, run_task
from ..errors import DdpfixError
from .output import fail, note

PROGRESS_MIN_FILES = 10  # a progress bar only for runs at least this long, and only on a terminal


def _codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return check_codes(values, "--select/--ignore")


class Run:
    """What every file command shares: settings, discovery, the worker pool, progress, messages."""

    def __init__(
        self,
        *,
        select: list[str] | None = None,
        ignore: list[str] | None = None,
        unsafe_fixes: bool | None = None,
        config: str | None = None,
        isolated: bool = False,
        exclude: list[str] | None = None,
        jobs: int | None = None,
        quiet: bool = False,
        verbose: bool = False,
        stdin_filename: str | None = None,
        cross_file: bool | None = None,
    ) -> None:
        self.overrides = Overrides(
            select=_codes(select),
            ignore=_codes(ignore),
            unsafe_fixes=unsafe_fixes,
            exclude=exclude,
            cross_file=cross_file,
        )
        self.resolver = Resolver(config, isolated)
        self.jobs = jobs
        self.quiet = quiet and not verbose
        self.verbose = verbose
        self.stdin_filename = stdin_filename
        self.errors: list[str] = []
        self._configs_seen: set[str] = set()

    def error(self, message: str) -> None:
        self.errors.append(message)
        fail(message)

    def verbose_note(self, message: str) -> None:
        if self.verbose:
            note(message)

    def options(self, path: str) -> Options:
        cfg = self.resolver.for_path(path)
        if self.verbose and cfg.path is not None and str(cfg.path) not in self._configs_seen:
            self._configs_seen.add(str(cfg.path))
            note(f"config: {cfg.path}")
        return effective(cfg, self.overrides, path)

    def _excluded(self, path: str, is_dir: bool) -> bool:
        cfg = self.resolver.for_dir(path) if is_dir else self.resolver.for_path(path)
        return is_excluded(cfg, self.overrides, path, is_dir)

    def files(self, paths: list[str] | None) -> list[str]:
        if not paths:
            if not self.quiet:
                note("ddpfix: no files given; nothing to do")
            return []
        return list(discover(paths, self._excluded, on_skip=lambda p, why: self.verbose_note(f"skipped: {p} ({why})")))

    def results(
        self, paths: list[str] | None, *, fix: bool, keep: str = "all", fixes: bool = False
    ) -> list[FileResult]:
        """Every file's result, in order; errors are printed as one line each (and remembered)."""
        start = time.perf_counter()
        files = self.files(paths)
        out: list[FileResult] = []
        tasks: list[Task] = []
        for path in files:
            if path == STDIN:
                name = self.stdin_filename or STDIN
                opts = self.options(name)
                opts.cross_file = False  # standard input goes to standard output: one text, no other file
                task = Task(name, opts, fix=fix, keep="all", fixes=fixes)
                res = run_task(task, data=sys.stdin.buffer.read())
                res.stdin = True
                out.append(res)
            else:
                tasks.append(Task(path, self.options(path), fix=fix, keep=keep, fixes=fixes))
        with self.progress(len(tasks)) as advance:
            out.extend(run_many(tasks, jobs=self.jobs, on_done=advance))
        for res in out:
            if res.error:
                self.error(res.error)
            elif self.verbose and res.result is not None:
                note(f"{res.path}: {len(res.result.diagnostics)} finding(s) in {res.seconds * 1000:.0f} ms")
        if self.verbose:
            note(f"{len(out)} file(s) in {time.perf_counter() - start:.2f} s")
        return out

    @contextmanager
    def progress(self, total: int) -> Iterator[Callable[[FileResult], None]]:
        console = Console(stderr=True)
        if self.quiet or total < PROGRESS_MIN_FILES or not console.is_terminal:
            yield lambda res: None
            return
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        bar = Progress(
            TextColumn("ddpfix"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
        )
        task = bar.add_task("files", total=total)
        started = False

        def advance(res: FileResult) -> None:
            # the bar (and its refresh thread) starts with the first result, after the worker pool has
            # forked: forking a process that already runs threads can deadlock the children
            nonlocal started
            if not started:
                bar.start()
                started = True
            bar.advance(task)

        try:
            yield advance
        finally:
            if started:
                bar.stop()


def start(**kwargs) -> Run:
    try:
        return Run(**kwargs)
    except DdpfixError as exc:
        fail(str(exc))
        raise typer.Exit(2) from None


def discovered(run: Run, paths, **kwargs) -> list[FileResult]:
    try:
        return run.results(paths, **kwargs)
    except DdpfixError as exc:  # a missing path, a broken config found on the way
        run.error(str(exc))
        return []


__all__ = ["PROGRESS_MIN_FILES", "Run", "discovered", "start"]
