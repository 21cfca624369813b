"""The benchmark and robustness corpus: the installed torch package's own sources plus the golden inputs.

Nothing is downloaded. `every=N` keeps every N-th torch file in sorted path order (deterministic).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def torch_dir() -> Path | None:
    """The installed torch package folder, found without importing torch (that takes seconds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def torch_files(every: int = 1, offset: int = 0) -> list[Path]:
    root = torch_dir()
    if root is None:
        return []
    files = sorted(root.rglob("*.py"), key=lambda p: p.relative_to(root).as_posix())
    return files[offset::every]


def golden_inputs() -> list[Path]:
    return sorted((ROOT / "tests" / "golden").glob("*/input.py"))


def line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
