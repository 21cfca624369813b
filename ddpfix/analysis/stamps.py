"""Stamps of the script's own modules (resolved path, size, modification time): what a cached
module summary is checked against. Each file is looked at once per analysis of a script;
`fresh_stamps()` starts a new one (the language server's next analysis sees an edited module)."""

from __future__ import annotations

import os
from pathlib import Path

Stamp = tuple[str, int, int]  # a file's resolved path, size and modification time


def stamp(path: Path) -> Stamp | None:
    """The file's stamp, read once per analysis of a script (`fresh_stamps()` starts one)."""
    if path in _STAMPS:
        return _STAMPS[path]
    try:
        st = os.stat(path)
    except OSError:
        stamp = None
    else:
        stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    _STAMPS[path] = stamp
    return stamp


_STAMPS: dict[Path, Stamp | None] = {}


def fresh_stamps() -> None:
    """A new analysis: the files are looked at again (an editor may have changed them since)."""
    _STAMPS.clear()


__all__ = ["Stamp", "fresh_stamps", "stamp"]
