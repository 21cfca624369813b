"""Scripts and their own modules written into a test's folder, and what `check` finds in them."""

import textwrap
from pathlib import Path

from ddpfix import fix_source


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def codes(path: Path) -> list[str]:
    return [d.code for d in fix_source(path.read_text(), path=str(path), fix=False).diagnostics]
