"""Folder walks from the command line: virtual environments left out by name, and `-v` says why."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ddpfix.cli import app

TRAIN = (
    "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "model(torch.randn(2, 2)).sum().backward()\nopt.step()\nprint('done')\n"
)


def write(path: Path, text: str = TRAIN) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_check_with_no_path_skips_a_venv_without_pyvenv_cfg(work):
    write(work / "train.py")
    write(work / ".venv" / "bin" / "python", "")
    write(work / ".venv" / "lib" / "python3.11" / "site-packages" / "pkg" / "train_lib.py")
    write(work / "env" / "Scripts" / "python.exe", "")
    write(work / "env" / "Lib" / "site-packages" / "other.py")
    write(work / "vendor" / "site-packages" / "third.py")
    result = CliRunner().invoke(app, ["check"])
    assert result.exit_code == 1
    assert {line.split(":")[0] for line in result.stdout.splitlines()} == {"train.py"}


def test_verbose_lists_each_skipped_path_with_why(work):
    write(work / "train.py")
    write(work / ".venv" / "bin" / "python", "")
    write(work / ".venv" / "x.py")
    write(work / "vendor" / "site-packages" / "third.py")
    write(work / "build" / "gen.py")
    write(work / ".gitignore", "build/\n")
    result = CliRunner().invoke(app, ["check", "-v", "."])
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped: ")]
    assert "skipped: .venv (virtual environment (bin/python))" in skipped
    assert "skipped: vendor/site-packages (installed packages (site-packages))" in skipped
    assert "skipped: build (ignored by .gitignore)" in skipped
    assert len(skipped) == len(set(skipped))  # one line each
    quiet = CliRunner().invoke(app, ["check", "."])
    assert "skipped" not in quiet.stderr
