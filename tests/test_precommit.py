"""The pre-commit hooks file: a valid manifest, entries that work, and a run with no files."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ddpfix.cli import app

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
PRE_COMMIT = shutil.which("pre-commit", path=os.path.dirname(sys.executable)) or shutil.which("pre-commit")

TRAIN = textwrap.dedent(
    """\
    import torch


    def main():
        model = torch.nn.Linear(2, 2)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.step()
            torch.save(model.state_dict(), "x.pt")


    if __name__ == "__main__":
        main()
    """
)

needs_pre_commit = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")


def hooks() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load(MANIFEST.read_text())}


@needs_pre_commit
def test_manifest_validates():
    proc = subprocess.run([PRE_COMMIT, "validate-manifest", str(MANIFEST)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_pre_commit
def test_validation_is_real(tmp_path):
    bad = tmp_path / ".pre-commit-hooks.yaml"
    bad.write_text("- id: ddpfix-check\n  entry: ddpfix check\n  language: python\n")  # no name
    proc = subprocess.run([PRE_COMMIT, "validate-manifest", str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0 and "name" in proc.stdout + proc.stderr


def test_hook_ids_and_entries():
    h = hooks()
    assert set(h) == {"ddpfix-check", "ddpfix-fix"}
    assert h["ddpfix-check"]["entry"] == "ddpfix check" and h["ddpfix-fix"]["entry"] == "ddpfix apply"
    for hook in h.values():
        assert hook["language"] == "python" and hook["types"] == ["python"]
    # the console script the entries call exists
    from ddpfix.config import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ddpfix"] == "ddpfix.cli:main"


def test_hook_run_with_no_files(tmp_path, monkeypatch):
    """Run without files (`always_run`), the check hook checks the folder, as `ddpfix check` does; the
    fix hook rewrites nothing it was not given: one line, exit 2."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "util.py").write_text("x = 1\n")
    check = CliRunner().invoke(app, shlex.split(hooks()["ddpfix-check"]["entry"])[1:])
    assert check.exit_code == 0, check.output
    (tmp_path / "train.py").write_text(TRAIN)
    assert CliRunner().invoke(app, shlex.split(hooks()["ddpfix-check"]["entry"])[1:]).exit_code == 1
    fix = CliRunner().invoke(app, shlex.split(hooks()["ddpfix-fix"]["entry"])[1:])
    assert fix.exit_code == 2 and fix.stderr.count("\n") == 1 and "Traceback" not in fix.output
    assert (tmp_path / "train.py").read_text() == TRAIN


def test_hooks_on_files_like_pre_commit_passes_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "util.py").write_text("x = 1\n")
    check = shlex.split(hooks()["ddpfix-check"]["entry"])[1:]
    fix = shlex.split(hooks()["ddpfix-fix"]["entry"])[1:]
    result = CliRunner().invoke(app, check + ["train.py", "util.py"])
    assert result.exit_code == 1 and "train.py:9:9: DDP401" in result.stdout
    result = CliRunner().invoke(app, fix + ["train.py", "util.py"])
    assert result.exit_code == 0 and "init_process_group" in (tmp_path / "train.py").read_text()
    result = CliRunner().invoke(app, check + ["train.py", "util.py"])
    assert result.exit_code == 0


@pytest.mark.slow
@needs_pre_commit
@pytest.mark.timeout(600)
def test_try_repo_end_to_end(tmp_path):
    """pre-commit installs ddpfix into its own environment (needs PyPI for the dependencies) and runs the hooks."""
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(tmp_path / "probe"), "setuptools>=77"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode != 0:
        pytest.skip("no package index reachable: pre-commit cannot build the hook environment")
    repo = tmp_path / "user"
    repo.mkdir()
    env = {
        **os.environ,
        "PRE_COMMIT_HOME": str(tmp_path / "cache"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
    }
    env.pop("FORCE_COLOR", None)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    (repo / "train.py").write_text(TRAIN)
    subprocess.run(["git", "add", "train.py"], cwd=repo, check=True, env=env)
    run = lambda hook: subprocess.run(  # noqa: E731
        [PRE_COMMIT, "try-repo", str(ROOT), hook, "--all-files"],
        cwd=repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=540,
    )
    proc = run("ddpfix-check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "DDP401" in proc.stdout
    proc = run("ddpfix-fix")
    assert proc.returncode == 1 and "files were modified by this hook" in proc.stdout
    assert "init_process_group" in (repo / "train.py").read_text()
