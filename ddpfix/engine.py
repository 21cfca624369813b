"""Files in, results out: discovery (.gitignore aware), reading, and atomic in-place writes."""
from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pathspec

from .api import fix_source
from .diagnostic import Result
from .errors import DdpfixError

STDIN = "-"
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", "node_modules", "site-packages"}


@dataclass
class FileResult:
    path: str
    result: Result | None = None
    error: str | None = None
    original: bytes | None = None


@dataclass
class Options:
    select: list[str] | None = None
    ignore: list[str] | None = None
    unsafe_fixes: bool = False


def discover(paths: Iterable[str]) -> Iterator[str]:
    """Expand the user's paths: files as given, directories walked for *.py (skipping VCS folders,
    virtualenvs and what .gitignore files ignore). A missing path raises DdpfixError."""
    for raw in paths:
        if raw == STDIN:
            yield raw
            continue
        p = Path(raw)
        if not p.exists() and not p.is_symlink():
            raise DdpfixError(f"{raw}: no such file or directory")
        if p.is_dir():
            yield from _walk(p)
        else:
            yield raw


def _is_venv(d: Path) -> bool:
    return (d / "pyvenv.cfg").exists() or (d / "conda-meta").is_dir()


def _walk(root: Path) -> Iterator[str]:
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

        def ignored(path: Path, is_dir: bool) -> bool:
            for base, spec in specs:
                try:
                    rel = path.relative_to(base).as_posix()
                except ValueError:
                    continue
                if spec.match_file(rel + ("/" if is_dir else "")):
                    return True
            return False

        dirnames[:] = sorted(
            n for n in dirnames if n not in SKIP_DIRS and not _is_venv(d / n) and not ignored(d / n, True)
        )
        for name in sorted(filenames):
            if name.endswith(".py") and not ignored(d / name, False):
                yield str(d / name)


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
        result = fix_source(data, path=path, select=options.select, ignore=options.ignore, unsafe_fixes=options.unsafe_fixes, fix=fix)
    except DdpfixError as exc:
        return FileResult(path, error=str(exc), original=data)
    except RecursionError:
        return FileResult(path, error=f"{path}: too deeply nested to analyse", original=data)
    except Exception as exc:  # an internal error is a bug: report it for this file and go on
        return FileResult(path, error=f"{path}: internal error ({type(exc).__name__}: {exc}); please report it", original=data)
    return FileResult(path, result=result, original=data)


def run_path(path: str, options: Options, *, fix: bool = True) -> FileResult:
    try:
        data = read(path)
    except DdpfixError as exc:
        return FileResult(path, error=str(exc))
    return process(path, data, options, fix=fix)


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
