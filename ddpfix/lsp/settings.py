"""Per-document rule options from the workspace's `[tool.ddpfix]` (the same files the CLI reads).

Discovery and parsing are `ddpfix.config`'s. The server only adds freshness: a document's options are
re-resolved whenever a pyproject.toml in one of its folders appears, disappears or changes (checked by
`stat`, so an edit in the editor or on disk is picked up on the next analysis without file watchers).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .. import config as _config
from ..errors import DdpfixError


@dataclass(frozen=True)
class RuleOptions:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] | None = None
    source: str | None = None  # the pyproject.toml they came from
    error: str | None = None  # a broken config: defaults are used and this is shown once
    cross_file: bool = True  # a fix may edit the script's own modules (`cross-file = false`: not)


DEFAULTS = RuleOptions()


def _stamp(folder: str) -> tuple:
    """(path, mtime, size) of every pyproject.toml from `folder` up to the root."""
    out = []
    folder = os.path.abspath(folder)
    while True:
        candidate = os.path.join(folder, "pyproject.toml")
        try:
            st = os.stat(candidate)
            out.append((candidate, st.st_mtime_ns, st.st_size))
        except OSError:
            pass
        parent = os.path.dirname(folder)
        if parent == folder:
            return tuple(out)
        folder = parent


class Settings:
    """Rule options for a file path (or a folder for documents that are not files yet)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[tuple, RuleOptions]] = {}

    def clear(self) -> None:
        self._cache.clear()

    def for_path(self, path: str | None, fallback_folder: str | None = None) -> RuleOptions:
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
        elif fallback_folder is not None:
            folder, path = fallback_folder, os.path.join(fallback_folder, "untitled.py")
        else:
            return DEFAULTS
        stamp = _stamp(folder)
        hit = self._cache.get(path)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        opts = self._resolve(path)
        self._cache[path] = (stamp, opts)
        return opts

    @staticmethod
    def _resolve(path: str) -> RuleOptions:
        try:
            cfg = _config.Resolver().for_path(path)
            eff = _config.effective(cfg, _config.Overrides(), path)
        except DdpfixError as exc:
            return RuleOptions(error=str(exc))
        return RuleOptions(
            select=tuple(eff.select) if eff.select is not None else None,
            ignore=tuple(eff.ignore) if eff.ignore else None,
            source=str(cfg.path) if cfg.path is not None else None,
            cross_file=eff.cross_file,
        )


__all__ = ["RuleOptions", "Settings", "DEFAULTS"]
