"""`[tool.ddpfix]` in the nearest pyproject.toml, and how command-line flags override it.

```toml
[tool.ddpfix]
select = ["DDP"]                 # rule codes or prefixes ("ALL" for every rule); default: all
ignore = ["DDP406"]              # codes or prefixes to skip
unsafe-fixes = false             # also apply behaviour-changing fixes
exclude = ["legacy/", "gen_*.py"]  # gitignore-style patterns, relative to this file's folder
per-file-ignores = { "tests/*" = ["DDP4"] }
cross-file = true                # a fix may edit the script's own modules too (false: the named files only)
```

The nearest pyproject.toml is the closest one, walking up from a file's folder, that has a
`[tool.ddpfix]` table (like ruff). An unknown key, a wrong type or an unknown rule code is a
`DdpfixError` (one line, exit 2).
"""

from __future__ import annotations

import difflib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pathspec

from .errors import DdpfixError
from .suppress import UNUSED
from .transforms import RULES

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

KEYS = ("select", "ignore", "unsafe-fixes", "exclude", "per-file-ignores", "cross-file")


def known_codes() -> list[str]:
    return [UNUSED.code] + [r.code for r in RULES]


def check_codes(values: Iterable[str], where: str) -> list[str]:
    """Normalise rule codes or prefixes (upper case, comma lists split); raise on one that selects nothing."""
    out = []
    known = known_codes()
    for item in values:
        if not isinstance(item, str):
            raise DdpfixError(f"{where}: expected rule codes as strings, got {item!r}")
        for code in (c.strip().upper() for c in item.split(",")):
            if not code:
                continue
            if code != "ALL" and not any(k.startswith(code) for k in known):
                hint = difflib.get_close_matches(code, known, n=1)
                raise DdpfixError(
                    f"{where}: unknown rule code or prefix: {code}" + (f" (did you mean {hint[0]}?)" if hint else "")
                )
            out.append(code)
    return out


@dataclass
class Config:
    """One `[tool.ddpfix]` table (or the defaults when there is none)."""

    path: Path | None = None  # the pyproject.toml it came from
    select: list[str] | None = None
    ignore: list[str] | None = None
    unsafe_fixes: bool | None = None
    exclude: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    cross_file: bool | None = None

    @property
    def root(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def _relative(self, path: str | os.PathLike) -> str:
        p = Path(os.path.abspath(path))
        try:
            return p.relative_to(Path(os.path.abspath(self.root))).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def excluded(self, path: str, is_dir: bool = False) -> bool:
        if not self.exclude:
            return False
        rel = self._relative(path)
        return _spec(tuple(self.exclude)).match_file(rel + ("/" if is_dir and not rel.endswith("/") else ""))

    def ignores_for(self, path: str) -> list[str]:
        if not self.per_file_ignores:
            return []
        rel = self._relative(path)
        out: list[str] = []
        for pattern, codes in self.per_file_ignores.items():
            if _spec((pattern,)).match_file(rel):
                out.extend(codes)
        return out


@lru_cache(maxsize=256)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def load(path: str | os.PathLike) -> Config:
    """Read `[tool.ddpfix]` from a pyproject.toml (or a ddpfix.toml holding the keys at top level)."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            doc = tomllib.load(f)
    except OSError as exc:
        raise DdpfixError(f"{p}: cannot read config: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DdpfixError(f"{p}: invalid TOML: {exc}") from None
    if p.name == "pyproject.toml":
        table = doc.get("tool", {}).get("ddpfix", {})
        where = f"{p}: [tool.ddpfix]"
    else:
        table, where = doc, str(p)
    return from_table(table, path=p, where=where)


def from_table(table: Any, *, path: Path | None = None, where: str = "[tool.ddpfix]") -> Config:
    if not isinstance(table, dict):
        raise DdpfixError(f"{where}: expected a table")
    for key in table:
        if key not in KEYS:
            hint = difflib.get_close_matches(key.replace("_", "-"), KEYS, n=1)
            raise DdpfixError(
                f"{where}: unknown key '{key}'"
                + (f" (did you mean '{hint[0]}'?)" if hint else f" (known: {', '.join(KEYS)})")
            )
    cfg = Config(path=path)
    if "select" in table:
        cfg.select = check_codes(_strings(table["select"], f"{where} select"), f"{where} select")
    if "ignore" in table:
        cfg.ignore = check_codes(_strings(table["ignore"], f"{where} ignore"), f"{where} ignore")
    if "unsafe-fixes" in table:
        if not isinstance(table["unsafe-fixes"], bool):
            raise DdpfixError(f"{where} unsafe-fixes: expected true or false, got {table['unsafe-fixes']!r}")
        cfg.unsafe_fixes = table["unsafe-fixes"]
    for key in ("unsafe-fixes", "cross-file"):
        if key in table and not isinstance(table[key], bool):
            raise DdpfixError(f"{where} {key}: expected true or false, got {table[key]!r}")
    if "cross-file" in table:
        cfg.cross_file = table["cross-file"]
    if "exclude" in table:
        cfg.exclude = _strings(table["exclude"], f"{where} exclude")
    if "per-file-ignores" in table:
        pfi = table["per-file-ignores"]
        if not isinstance(pfi, dict):
            raise DdpfixError(f"{where} per-file-ignores: expected a table of pattern = [codes]")
        for pattern, codes in pfi.items():
            what = f"{where} per-file-ignores '{pattern}'"
            cfg.per_file_ignores[pattern] = check_codes(_strings(codes, what), what)
    return cfg


def _strings(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DdpfixError(f"{where}: expected a list of strings, got {value!r}")
    return list(value)


def _has_table(pyproject: Path) -> bool:
    try:
        with open(pyproject, "rb") as f:
            data = f.read()
    except OSError:
        return False
    if b"ddpfix" not in data:
        return False
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return True  # let load() report the problem
    return isinstance(doc.get("tool"), dict) and "ddpfix" in doc["tool"]


class Resolver:
    """Finds the config that applies to each file (cached per folder); `explicit` overrides discovery."""

    def __init__(self, explicit: str | None = None, isolated: bool = False) -> None:
        self.isolated = isolated
        self.explicit = load(explicit) if explicit else None
        self._by_dir: dict[str, Config] = {}
        self._loaded: dict[Path, Config] = {}

    def for_path(self, path: str) -> Config:
        if self.explicit is not None:
            return self.explicit
        if self.isolated:
            return self._default()
        folder = os.path.dirname(os.path.abspath(path)) if path != "-" else os.getcwd()
        return self.for_dir(folder)

    def for_dir(self, folder: str) -> Config:
        if self.explicit is not None:
            return self.explicit
        if self.isolated:
            return self._default()
        folder = os.path.abspath(folder)
        hit = self._by_dir.get(folder)
        if hit is not None:
            return hit
        candidate = Path(folder) / "pyproject.toml"
        if candidate.is_file() and _has_table(candidate):
            cfg = self._loaded.get(candidate)
            if cfg is None:
                cfg = self._loaded[candidate] = load(candidate)
        else:
            parent = os.path.dirname(folder)
            cfg = self.for_dir(parent) if parent != folder else self._default()
        self._by_dir[folder] = cfg
        return cfg

    def _default(self) -> Config:
        cfg = self._loaded.get(Path())
        if cfg is None:
            cfg = self._loaded[Path()] = Config()
        return cfg


@dataclass
class Overrides:
    """What the command line says; None means "take the config's value"."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    unsafe_fixes: bool | None = None
    exclude: list[str] | None = None
    cross_file: bool | None = None


def effective(cfg: Config, cli: Overrides, path: str):
    """The rule options for one file: CLI flags over the config, plus the config's per-file ignores."""
    from .engine import Options  # engine imports this module

    select = cli.select if cli.select is not None else cfg.select
    ignore = list(cli.ignore if cli.ignore is not None else (cfg.ignore or []))
    ignore += cfg.ignores_for(path)
    unsafe = cli.unsafe_fixes if cli.unsafe_fixes is not None else bool(cfg.unsafe_fixes)
    cross = cli.cross_file if cli.cross_file is not None else cfg.cross_file is not False
    return Options(select=select, ignore=ignore or None, unsafe_fixes=unsafe, cross_file=cross)


def is_excluded(cfg: Config, cli: Overrides, path: str, is_dir: bool = False) -> bool:
    if cli.exclude is not None:
        return bool(cli.exclude) and Config(path=None, exclude=cli.exclude).excluded(path, is_dir)
    return cfg.excluded(path, is_dir)


__all__ = [
    "Config",
    "Overrides",
    "Resolver",
    "load",
    "from_table",
    "effective",
    "is_excluded",
    "check_codes",
    "known_codes",
    "KEYS",
]
