"""Writing a fix that spans files: all of them or none.

Every file's new bytes are rendered before the first write. Each file is then replaced through a
temporary file and `os.replace` (engine.write_atomic: permissions kept, a file changed on disk since
it was read refused). If a write fails, the files already replaced get their original bytes back
(kept in memory) and the error says so in one line; no file is left half-written."""

from __future__ import annotations

import os
from dataclasses import dataclass

from .engine import write_atomic
from .errors import DdpfixError


@dataclass(frozen=True)
class Write:
    path: str
    data: bytes  # the new bytes
    original: bytes | None  # the bytes read before the fix (None: not checked)


def write_all(writes: list[Write]) -> None:
    """Write every file or none; a failure raises DdpfixError after restoring what was written."""
    done: list[Write] = []
    for w in writes:
        try:
            write_atomic(w.path, w.data, expected=w.original)
        except DdpfixError as exc:
            unrestored = _restore(done)
            if not done:
                raise
            what = ", ".join(d.path for d in done)
            if unrestored:
                raise DdpfixError(
                    f"{exc}; could not restore {', '.join(unrestored)} (written with the fix), the rest restored"
                ) from None
            raise DdpfixError(f"{exc}; nothing rewritten ({what} restored)") from None
        done.append(w)


def _restore(done: list[Write]) -> list[str]:
    """Put back the original bytes of the files written; the paths that could not be restored."""
    failed = []
    for w in reversed(done):
        if w.original is None:
            failed.append(w.path)
            continue
        try:
            write_atomic(w.path, w.original)
        except (DdpfixError, OSError):
            failed.append(w.path)
    return failed


def same_file(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


__all__ = ["Write", "same_file", "write_all"]
