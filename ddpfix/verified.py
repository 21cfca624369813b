"""Verified rewrites: `fix_and_verify` rewrites a script into a temporary copy of its folder, runs
`ddpfix verify` there, and writes the file in place only when no check failed (``--force`` writes
anyway). What `apply --verify`, `diff --verify` and the language server's "Convert to DDP and verify"
run.

The copy holds the script's folder (its own modules, configs and data files next to it), without
version-control folders, virtual environments, caches and folders of installed packages (``SKIP_DIRS``,
and any folder with a ``pyvenv.cfg``); a folder of more than ``MAX_COPY_BYTES`` is refused rather than
copied. The run's working directory is the copy of the script's folder. The copy is removed afterwards.

Whether the rewrite passed is verify's own verdict (:attr:`VerifyReport.ok`: no check failed; a check
is ``n/a`` only where verify's rules say it does not apply). Standard library only at import time:
``ddpfix.verify`` needs torch only to run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field

from .diagnostic import Result
from .engine import read
from .errors import DdpfixError
from .proof import failure_lines, proven
from .writing import Write, write_all

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "node_modules",
        "site-packages",
        "wandb",
        "runs",
        "lightning_logs",
    }
)
MAX_COPY_BYTES = 1 << 30  # 1 GiB


@dataclass
class VerifiedFix:
    """What `fix_and_verify` did: the rewrite, verify's report on it, and whether the file was written."""

    path: str
    result: Result
    report: object  # ddpfix.verify.VerifyReport
    written: bool = False
    copied: list = field(default_factory=list)  # the copied folder's top-level entries

    @property
    def ok(self) -> bool:
        """Verify failed no check (its own policy: ``n/a`` checks do not count)."""
        return bool(self.report.ok)

    @property
    def summary(self) -> str:
        """``verified on 2 processes: shards disjoint, parameters in sync after 8 steps, ...`` or what failed."""
        return proven(self.report)

    @property
    def failures(self) -> list[str]:
        """The failed checks, each followed by its evidence (indented)."""
        return failure_lines(self.report)


def _ignored(folder: str, names: list[str]) -> set[str]:
    skip = set()
    for name in names:
        full = os.path.join(folder, name)
        if os.path.isdir(full) and not os.path.islink(full):
            if name in SKIP_DIRS or os.path.exists(os.path.join(full, "pyvenv.cfg")):
                skip.add(name)
        elif name.startswith(".ddpfix-") and name.endswith(".tmp"):  # an atomic write in progress
            skip.add(name)
    return skip


def folder_size(folder: str, limit: int = MAX_COPY_BYTES) -> int:
    """Bytes `copy_folder` would copy (stops counting past ``limit``)."""
    total = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if d not in _ignored(root, dirs)]
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            if total > limit:
                return total
    return total


def copy_folder(folder: str, into: str, limit: int = MAX_COPY_BYTES) -> list[str]:
    """Copy ``folder`` to ``into`` (which must not exist), without the skipped folders; symlinks stay
    links. Refuses a folder of more than ``limit`` bytes. Returns the copied top-level entries."""
    size = folder_size(folder, limit)
    if size > limit:
        raise DdpfixError(
            f"{folder}: more than {limit >> 20} MiB to copy for verification; move the script into a smaller "
            "folder, or run `ddpfix apply` and `ddpfix verify` on a copy by hand"
        )
    try:
        shutil.copytree(folder, into, symlinks=True, ignore=_ignored)
    except (OSError, shutil.Error) as exc:
        raise DdpfixError(f"{folder}: cannot copy for verification: {exc}") from None
    return sorted(os.listdir(into))


def verify_source(
    path: str,
    data: bytes,
    args: Iterable[str] = (),
    *,
    nproc: int | None = None,
    timeout: float | None = None,
    backend: str = "auto",
    python: str | None = None,
    env: dict | None = None,
    others: dict[str, bytes] | None = None,
):
    """Run `ddpfix verify` on ``data`` as the script ``path``: in a temporary copy of its folder, with
    the copy of its folder as the working directory; ``others`` (paths of the script's own modules ->
    new bytes) replace those modules in the copy. Returns (report, copied top-level entries)."""
    from .verify import DEFAULT_TIMEOUT, verify_script

    folder = os.path.dirname(os.path.abspath(path))
    tmp = tempfile.mkdtemp(prefix="ddpfix-verified-")
    try:
        copy = os.path.join(tmp, os.path.basename(folder) or "script")
        copied = copy_folder(folder, copy)
        script = os.path.join(copy, os.path.basename(path))
        if os.path.islink(script):
            os.unlink(script)
        with open(script, "wb") as f:
            f.write(data)
        for module, new in (others or {}).items():
            inside = os.path.join(copy, os.path.relpath(os.path.abspath(module), folder))
            if os.path.islink(inside):
                os.unlink(inside)
            with open(inside, "wb") as f:
                f.write(new)
        report = verify_script(
            os.path.basename(path),
            list(args),
            nproc=nproc,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
            backend=backend,
            cwd=copy,
            python=python,
            env=env,
        )
        return report, copied
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fix_and_verify(
    path,
    args: Iterable[str] = (),
    *,
    source: str | bytes | None = None,
    select: Iterable[str] | None = None,
    ignore: Iterable[str] | None = None,
    unsafe_fixes: bool = False,
    nproc: int | None = None,
    timeout: float | None = None,
    backend: str = "auto",
    write: bool = True,
    force: bool = False,
    result: Result | None = None,
    python: str | None = None,
    env: dict | None = None,
) -> VerifiedFix:
    """Rewrite the script at ``path`` into DDP form, prove the rewrite by running it under torchrun
    (``nproc`` processes, default 2) in a temporary copy of its folder with ``args``, and write it in
    place (atomically) only when no check failed, or with ``force``. ``write=False`` only reports.

    ``source`` is the script's text when it is not (or not yet) what is on disk (an editor's buffer);
    ``result`` a rewrite already made (what `apply` computed with the file's configuration). Raises
    `DdpfixError` (unreadable file, syntax error, folder too large) and
    `ddpfix.verify.VerifyUsageError` (torch missing, bad option) as one-line errors; nothing is written
    then."""
    path = os.fspath(path)
    original = read(path) if source is None else source
    if result is None:
        from .api import fix_source

        result = fix_source(original, path=path, select=select, ignore=ignore, unsafe_fixes=unsafe_fixes)
    new = result.data if result.data is not None else result.code.encode("utf-8")
    others = {p: change.data for p, change in result.others.items()}  # the script's own modules a fix edits
    report, copied = verify_source(
        path, new, args, nproc=nproc, timeout=timeout, backend=backend, python=python, env=env, others=others
    )
    out = VerifiedFix(path=path, result=result, report=report, copied=copied)
    if write and result.changed_files and (report.ok or force):
        expected = original if isinstance(original, bytes) else None
        writes = [Write(path, new, expected)] if result.changed else []
        writes += [Write(p, change.data, change.original) for p, change in result.others.items()]
        write_all(writes)  # every file or none
        out.written = True
    return out


__all__ = ["MAX_COPY_BYTES", "SKIP_DIRS", "VerifiedFix", "copy_folder", "fix_and_verify", "verify_source"]
