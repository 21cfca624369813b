"""Stamps of the script's own modules (resolved path, size, modification time): what a cached
module summary is checked against. Each file is looked at once per analysis of a script;
`fresh_stamps()` starts a new one (the language server's next analysis sees an edited module).

A fix that edits one of the script's own modules checks its output as the project will be once it
is written: `overlaid({path: new_bytes})` makes the analysis read those modules as the fix leaves
them (their stamp then holds a digest of the new text instead of a modification time)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

Stamp = tuple[str, int, int]  # a file's resolved path, size and modification time


def stamp(path: Path) -> Stamp | None:
    """The file's stamp, read once per analysis of a script (`fresh_stamps()` starts one)."""
    if path in _STAMPS:
        return _STAMPS[path]
    new = _OVERLAY.get(os.path.realpath(path)) if _OVERLAY else None
    if new is not None:
        digest = int.from_bytes(hashlib.blake2b(new, digest_size=7).digest(), "big")
        _STAMPS[path] = (os.path.realpath(path), len(new), -1 - digest)  # never a modification time
        return _STAMPS[path]
    try:
        st = os.stat(path)
    except OSError:
        stamp = None
    else:
        stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    _STAMPS[path] = stamp
    return stamp


def read_bytes(path: Path) -> bytes:
    """The module's text as the analysis sees it: the file, or what `overlaid` says it becomes."""
    new = _OVERLAY.get(os.path.realpath(path)) if _OVERLAY else None
    return path.read_bytes() if new is None else new


@contextmanager
def overlaid(texts: Mapping[Path, bytes]) -> Iterator[None]:
    """Within the block, the modules of `texts` read as their new bytes (the files are not touched)."""
    if not texts:
        yield
        return
    saved = dict(_OVERLAY)
    _OVERLAY.update({os.path.realpath(p): data for p, data in texts.items()})
    _STAMPS.clear()
    try:
        yield
    finally:
        _OVERLAY.clear()
        _OVERLAY.update(saved)
        _STAMPS.clear()


_STAMPS: dict[Path, Stamp | None] = {}
_OVERLAY: dict[str, bytes] = {}  # resolved path -> the bytes a fix gives that module


def fresh_stamps() -> None:
    """A new analysis: the files are looked at again (an editor may have changed them since)."""
    _STAMPS.clear()


__all__ = ["Stamp", "fresh_stamps", "overlaid", "read_bytes", "stamp"]
