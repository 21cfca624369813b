"""Scripts and their own modules written into a test's folder, and what `check` finds in them."""

import shutil
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


def edit(path: Path, old: str, new: str) -> None:
    """Replace `old` (which must be there) by `new` in the file at `path`."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def by_code(result) -> dict[str, list]:
    """A result's diagnostics by rule code, in order."""
    out: dict[str, list] = {}
    for d in result.diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def golden_project(case: Path, folder: Path, *modules: str) -> Path:
    """A golden's input as `main.py` in `folder`, beside copies of its `modules`."""
    (folder / "main.py").write_bytes((case / "input.py").read_bytes())
    for name in modules:
        (folder / name).write_bytes((case / name).read_bytes())
    return folder


def golden_copy(case: Path, folder: Path) -> Path:
    """A copy of a golden's project (its input.py and modules, not what is expected of them) in `folder`."""
    shutil.copytree(case, folder / "p", ignore=shutil.ignore_patterns("expected*", "diagnostics.txt", "__pycache__"))
    return folder / "p"


def fix_input(root: Path, **kwargs):
    """`fix_source` on `root`'s input.py with cross-file edits, as the command line makes them."""
    path = root / "input.py"
    return fix_source(path.read_text(), path=str(path), cross_file=True, **kwargs)
