"""Files in, results out: discovery (.gitignore and config aware), parallel workers, atomic writes."""

from __future__ import annotations

import multiprocessing
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path

import pathspec

from .api import fix_source
from .diagnostic import Result
from .errors import DdpfixError
from .fix_edits import with_fixes

STDIN = "-"
SKIP_DIRS = {  # folders never walked, with why (`-v` says it)
    ".git": "version control",
    ".hg": "version control",
    ".svn": "version control",
    "__pycache__": "cache",
    ".tox": "tox environments",
    ".nox": "nox environments",
    ".mypy_cache": "cache",
    ".pytest_cache": "cache",
    ".ruff_cache": "cache",
    "node_modules": "node_modules",
    "site-packages": "installed packages (site-packages)",
}
VENV_NAMES = (".venv", "venv", "env")  # skipped when they hold an interpreter, even without pyvenv.cfg
VENV_PYTHONS = ("bin/python", "bin/python3", "Scripts/python.exe")
POOL_MIN_FILES = 8  # below this a process pool costs more than it saves


@dataclass
class FileResult:
    path: str
    result: Result | None = None
    error: str | None = None
    original: bytes | None = None
    fixes: dict[str, list[dict]] = field(default_factory=dict)  # code -> edits of that rule's fix (formats)
    withheld: dict[str, str] = field(default_factory=dict)  # code -> why the guard withheld that rule's fix
    seconds: float = 0.0
    stdin: bool = False  # read from standard input (apply writes it to standard output)


@dataclass
class Options:
    select: list[str] | None = None
    ignore: list[str] | None = None
    unsafe_fixes: bool = False
    cross_file: bool = True  # a fix may also edit the script's own modules (Result.others)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


# ---------------------------------------------------------------------------------------- discovery
def discover(
    paths: Iterable[str],
    excluded: Callable[[str, bool], bool] | None = None,
    on_skip: Callable[[str, str], None] | None = None,
) -> Iterator[str]:
    """Expand the user's paths: files as given, directories walked for *.py (skipping VCS folders,
    virtualenvs and what .gitignore files ignore). `excluded(path, is_dir)` (the config's `exclude`)
    applies to walked and to explicitly named paths alike; `on_skip(path, why)` hears of each path
    left out. A missing path raises DdpfixError."""
    for raw in paths:
        if raw == STDIN:
            yield raw
            continue
        p = Path(raw)
        if not p.exists() and not p.is_symlink():
            raise DdpfixError(f"{raw}: no such file or directory")
        is_dir = p.is_dir()
        if excluded is not None and excluded(raw, is_dir):
            if on_skip is not None:
                on_skip(raw, EXCLUDED)
            continue
        if is_dir:
            yield from _walk(p, excluded, on_skip)
        else:
            yield raw


EXCLUDED = "excluded by the config or --exclude"


def skipped_dir(d: Path) -> str | None:
    """Why the walk leaves the folder `d` out (a VCS folder, a cache, a virtual or conda environment,
    installed packages), or None to walk it."""
    if d.name in SKIP_DIRS:
        return SKIP_DIRS[d.name]
    if (d / "pyvenv.cfg").exists():
        return "virtual environment (pyvenv.cfg)"
    if (d / "conda-meta").is_dir():
        return "conda environment (conda-meta)"
    if d.name in VENV_NAMES:
        python = next((p for p in VENV_PYTHONS if (d / p).exists()), None)
        if python is not None:
            return f"virtual environment ({python})"
    return None


def _walk(
    root: Path, excluded: Callable[[str, bool], bool] | None, on_skip: Callable[[str, str], None] | None
) -> Iterator[str]:
    specs: list[tuple[Path, pathspec.PathSpec]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        ignore_file = d / ".gitignore"
        if ignore_file.is_file():
            try:
                lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                specs.append((d, pathspec.GitIgnoreSpec.from_lines(lines)))
            except OSError:
                pass

        def why_not(path: Path, is_dir: bool) -> str | None:
            if is_dir and (why := skipped_dir(path)) is not None:
                return why
            for base, spec in specs:
                try:
                    rel = path.relative_to(base).as_posix()
                except ValueError:
                    continue
                if spec.match_file(rel + ("/" if is_dir else "")):
                    return f"ignored by {base / '.gitignore'}"
            if excluded is not None and excluded(str(path), is_dir):
                return EXCLUDED
            return None

        def kept(path: Path, is_dir: bool) -> bool:
            why = why_not(path, is_dir)
            if why is not None and on_skip is not None:
                on_skip(str(path), why)
            return why is None

        dirnames[:] = sorted(n for n in dirnames if kept(d / n, True))
        for name in sorted(filenames):
            if name.endswith(".py") and kept(d / name, False):
                yield str(d / name)


# ---------------------------------------------------------------------------------------- one file
def read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except IsADirectoryError:
        raise DdpfixError(f"{path}: is a directory") from None
    except OSError as exc:
        raise DdpfixError(f"{path}: cannot read: {exc.strerror or exc}") from None


def process(path: str, data: bytes, options: Options, *, fix: bool = True) -> FileResult:
    if b"\x00" in data:
        return FileResult(path, error=f"{path}: binary file, not Python source", original=data)
    try:
        o = options
        result = fix_source(
            data,
            path=path,
            select=o.select,
            ignore=o.ignore,
            unsafe_fixes=o.unsafe_fixes,
            fix=fix,
            cross_file=o.cross_file,
        )
    except DdpfixError as exc:
        return FileResult(path, error=str(exc), original=data)
    except RecursionError:
        return FileResult(path, error=f"{path}: too deeply nested to analyse", original=data)
    except Exception as exc:  # an internal error is a bug: report it for this file and go on
        return FileResult(
            path, error=f"{path}: internal error ({type(exc).__name__}: {exc}); please report it", original=data
        )
    return FileResult(path, result=result, original=data)


def run_path(path: str, options: Options, *, fix: bool = True) -> FileResult:
    try:
        data = read(path)
    except DdpfixError as exc:
        return FileResult(path, error=str(exc))
    return process(path, data, options, fix=fix)


# ---------------------------------------------------------------------------------------- many files
@dataclass
class Task:
    path: str
    options: Options
    fix: bool = True
    keep: str = "all"  # what the caller needs back: "all", "diff" (no texts), "diagnostics" (no texts, no diff)
    fixes: bool = False  # attach per-rule fix edits


def run_task(task: Task, data: bytes | None = None) -> FileResult:
    import time

    start = time.perf_counter()
    res = (
        process(task.path, data, task.options, fix=task.fix)
        if data is not None
        else run_path(task.path, task.options, fix=task.fix)
    )
    if task.fixes:
        with_fixes(res, cross_file=task.options.cross_file)
    res.seconds = time.perf_counter() - start
    return _trim(res, task.keep)


def _trim(res: FileResult, keep: str) -> FileResult:
    """Send back only what the caller uses (pickling whole sources back from workers costs)."""
    if keep == "all" or res.result is None:
        if keep != "all":
            res.original = None
        return res
    diff = keep == "diff"
    r = res.result
    res.result = replace(r, source="", code="", data=None, diff=r.diff if diff else "", others=r.others if diff else {})
    res.original = None
    return res


def _pool_init() -> None:  # workers leave Ctrl-C to the parent, which stops them
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def run_many(
    tasks: list[Task], *, jobs: int | None = None, on_done: Callable[[FileResult], None] | None = None
) -> Iterator[FileResult]:
    """Run every task, in a process pool when there are enough files; results come back in task order."""
    jobs = default_jobs() if not jobs or jobs < 1 else jobs
    jobs = min(jobs, len(tasks))
    if jobs <= 1 or len(tasks) < POOL_MIN_FILES:
        for task in tasks:
            res = run_task(task)
            if on_done is not None:
                on_done(res)
            yield res
        return
    # fork where it is safe and cheap (workers inherit the imported parser); the platform default elsewhere
    method = "fork" if sys.platform.startswith("linux") else None
    ctx = multiprocessing.get_context(method)
    # biggest files first (longest-processing-time scheduling): a large file started last would
    # leave every other worker idle at the end; results are still handed back in task order
    todo = sorted(range(len(tasks)), key=lambda i: -_size(tasks[i].path))
    done: dict[int, FileResult] = {}
    next_out = 0
    while todo:
        # At most 2 x jobs files are in flight. If a worker dies (a crash in native code, the OOM
        # killer), the pool breaks: the files in flight are re-run one per process, so the one that
        # crashes is reported as an error, and the rest go on in a fresh pool.
        suspects: list[int] = []
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_pool_init) as pool:
            queue = list(reversed(todo))
            running: dict = {}
            while queue or running:
                while queue and len(running) < 2 * jobs:
                    i = queue.pop()
                    running[pool.submit(run_task, tasks[i])] = i
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                broken = False
                for fut in finished:
                    try:
                        res = fut.result()
                    except BrokenProcessPool:
                        broken = True
                        continue
                    i = running.pop(fut)
                    if on_done is not None:
                        on_done(res)
                    done[i] = res
                if broken:
                    suspects = sorted(running.values())
                    todo = list(reversed(queue))
                    break
                while next_out in done:
                    yield done.pop(next_out)
                    next_out += 1
            else:
                todo = []
        for i in suspects:
            res = _run_isolated(ctx, tasks[i])
            if on_done is not None:
                on_done(res)
            done[i] = res
        while next_out in done:
            yield done.pop(next_out)
            next_out += 1


def _run_isolated(ctx, task: Task) -> FileResult:
    """Run one task in a process of its own; a crash there becomes this file's error."""
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_isolated_main, args=(task, send), daemon=True)
    proc.start()
    send.close()
    try:
        res = receive.recv()
    except EOFError:
        res = None
    proc.join()
    if res is None:
        code = proc.exitcode
        why = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return FileResult(
            task.path, error=f"{task.path}: internal error (the analysis crashed: {why}); please report it"
        )
    return res


def _isolated_main(task: Task, send) -> None:
    _pool_init()
    send.send(run_task(task))
    send.close()


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# ---------------------------------------------------------------------------------------- writing
def write_atomic(path: str, data: bytes, expected: bytes | None = None) -> None:
    """Replace `path` with `data` through a temp file in the same folder; keep permissions; refuse if
    the file is read-only or changed on disk since it was read. The original survives any failure."""
    real = os.path.realpath(path)  # a symlink keeps pointing at the rewritten target
    try:
        st = os.stat(real)
    except OSError as exc:
        raise DdpfixError(f"{path}: cannot stat: {exc.strerror or exc}") from None
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise DdpfixError(f"{path}: file is read-only; not rewritten")
    if expected is not None and read(real) != expected:
        raise DdpfixError(f"{path}: changed on disk since it was read; not rewritten")
    folder = os.path.dirname(real) or "."
    fd, tmp = tempfile.mkstemp(prefix=".ddpfix-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        os.replace(tmp, real)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise DdpfixError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise
