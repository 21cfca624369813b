"""`ddpfix apply --verify` / `diff --verify` and `ddpfix.fix_and_verify`: a rewrite is written only when
`ddpfix verify` passes it in a temporary copy of the script's folder.

Fast tests stub the torchrun run (``verify_source``); the slow ones run it: the bundled example is
rewritten, a script whose rewrite trains every rank on the same batches is left untouched (exit 1),
and ``--force`` writes it anyway."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from teardown import CrashAtExitRerun
from typer.testing import CliRunner

import ddpfix
from ddpfix import verified
from ddpfix.cli import app
from ddpfix.errors import DdpfixError
from ddpfix.proof import failure_lines, proven
from ddpfix.verify.checks import FAIL, NA, PASS, CheckResult, VerifyReport

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "train.py"
SAME_BATCHES = ROOT / "tests" / "verify_cases" / "generator_batches.py"
TIMEOUT = 240


def check(name, status, evidence=(), **compared):
    return CheckResult(name, name.title(), status, list(evidence), {}, compared)


def report(*checks, world=2):
    return VerifyReport(checks=list(checks), meta={"world_size": world})


PASSING = report(
    check("completes", PASS, ranks=2),
    check("ddp", PASS, ranks=2, steps=8),
    check("shards", PASS, passes=1, indices=512),
    check("epoch_order", NA),
    check("params", PASS, ranks=2, steps=8, checksums=20),
    check("files", PASS, files=2, ranks=2),
    check("collectives", PASS, ranks=2, collectives=8),
    check("probe", PASS, ranks=2, lines=50, patches=7),
    check("single", NA),
)
FAILING = report(
    check("completes", PASS, ranks=2),
    check(
        "shards", FAIL, ["ranks 0 and 1 fed the same 8 training inputs to Linear's forward (train.py:38)"], inputs=32
    ),
    check("files", FAIL, ["ckpt.pt written by ranks [0, 1]", "log.txt written by ranks [0, 1]"], files=2),
    check("single", NA),
)


# ----------------------------------------------------------------------------- what was proven
def test_the_summary_names_what_the_checks_proved():
    assert proven(PASSING) == (
        "verified on 2 processes: every rank finished, gradients all-reduced through DDP, shards disjoint "
        "(1 pass, 512 indices), parameters in sync after 8 steps, 1 writer per file (2 files), the same 8 "
        "collectives on every rank (n/a: epoch_order, single)"
    )
    three = report(check("completes", PASS, ranks=3), check("params", PASS, ranks=3, steps=1), world=3)
    assert proven(three) == "verified on 3 processes: every rank finished, parameters in sync after 1 step"
    hand_cut = report(check("shards", PASS, inputs=12))
    assert proven(hand_cut) == "verified on 2 processes: each rank fed its own training inputs (12 compared)"
    assert proven(FAILING) == "verification failed on 2 processes: shards, files"
    assert failure_lines(FAILING) == [
        "FAIL  shards: Shards",
        "      ranks 0 and 1 fed the same 8 training inputs to Linear's forward (train.py:38)",
        "FAIL  files: Files",
        "      ckpt.pt written by ranks [0, 1]",
        "      log.txt written by ranks [0, 1]",
    ]


# ----------------------------------------------------------------------------- the copy
def test_the_copy_holds_the_scripts_folder_without_vcs_venvs_and_caches(tmp_path):
    src = tmp_path / "proj"
    for rel in ("train.py", "utils/helpers.py", "data/x.csv", "config.yaml"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(rel)
    for rel in (".git/HEAD", "__pycache__/x.pyc", ".venv/bin/python", "env/lib/x.py", "node_modules/a.js"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("x")
    (src / "env" / "pyvenv.cfg").write_text("home = /usr")  # a virtual environment under any name
    copied = verified.copy_folder(str(src), str(tmp_path / "copy"))
    assert copied == ["config.yaml", "data", "train.py", "utils"]
    assert (tmp_path / "copy" / "utils" / "helpers.py").read_text() == "utils/helpers.py"
    with pytest.raises(DdpfixError, match="more than 0 MiB to copy for verification"):
        verified.copy_folder(str(src), str(tmp_path / "copy2"), limit=10)
    assert not (tmp_path / "copy2").exists()


@pytest.fixture
def project(tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "train.py")
    (folder / "helpers.py").write_text("X = 1\n")
    return folder


def stub_verify(monkeypatch, rep):
    """Replace the torchrun run: record what it was given (and what the copy held), answer `rep`."""
    seen = {}

    def fake(script, args, **kw):
        cwd = Path(kw["cwd"])
        seen.update(script=script, args=list(args), cwd=cwd, nproc=kw["nproc"], timeout=kw["timeout"])
        seen["files"] = sorted(p.name for p in cwd.iterdir())
        seen["text"] = (cwd / script).read_text()
        return rep

    monkeypatch.setattr("ddpfix.verify.verify_script", fake)
    return seen


def test_fix_and_verify_writes_only_a_rewrite_that_passed(project, monkeypatch):
    original = (project / "train.py").read_bytes()
    expected = ddpfix.fix_source(original, path=str(project / "train.py")).data
    seen = stub_verify(monkeypatch, PASSING)
    out = ddpfix.fix_and_verify(project / "train.py", ["--epochs", "1"], nproc=3, timeout=50)
    assert out.ok and out.written and out.summary.startswith("verified on 2 processes: every rank finished")
    assert (project / "train.py").read_bytes() == expected
    assert seen["text"].encode() == expected and seen["files"] == ["helpers.py", "train.py"]
    assert seen["args"] == ["--epochs", "1"] and seen["nproc"] == 3 and seen["timeout"] == 50
    assert seen["script"] == "train.py" and seen["cwd"].name == "proj" and not seen["cwd"].exists()  # removed


def test_fix_and_verify_leaves_the_file_untouched_when_a_check_fails_unless_forced(project, monkeypatch):
    original = (project / "train.py").read_bytes()
    stub_verify(monkeypatch, FAILING)
    out = ddpfix.fix_and_verify(project / "train.py")
    assert not out.ok and not out.written and (project / "train.py").read_bytes() == original
    assert sorted(os.listdir(project)) == ["helpers.py", "train.py"]  # no temporary file left behind
    forced = ddpfix.fix_and_verify(project / "train.py", force=True)
    assert forced.written and (project / "train.py").read_bytes() != original


def test_apply_verify_cli_exit_codes_and_messages(project, monkeypatch):
    runner = CliRunner()
    original = (project / "train.py").read_bytes()
    stub_verify(monkeypatch, FAILING)
    res = runner.invoke(app, ["apply", "--verify", str(project / "train.py"), "--", "--epochs", "1"])
    assert res.exit_code == 1, res.output
    assert "FAIL  shards: Shards\n      ranks 0 and 1 fed the same 8 training inputs" in res.output
    assert "; verification failed on 2 processes: shards, files" in res.output
    assert "not rewritten: a check failed on the rewrite (--force writes it anyway)" in res.output
    assert (project / "train.py").read_bytes() == original

    res = runner.invoke(app, ["diff", "--verify", str(project / "train.py")])
    assert res.exit_code == 1 and "+import torch.distributed as dist" in res.output
    assert "verification failed on 2 processes" in res.output and (project / "train.py").read_bytes() == original

    stub_verify(monkeypatch, PASSING)
    res = runner.invoke(app, ["diff", "--verify", "--exit-zero", str(project / "train.py")])
    assert res.exit_code == 0 and "verified on 2 processes" in res.output
    res = runner.invoke(app, ["apply", "--verify", str(project / "train.py")])
    assert res.exit_code == 0, res.output
    (line,) = [ln for ln in res.output.splitlines() if "verified on" in ln]
    assert line.startswith(f"{project / 'train.py'}: 3 hunk(s) applied, ") and "; verified on 2 processes: " in line
    assert (project / "train.py").read_bytes() != original


@pytest.mark.parametrize(
    "argv, message",
    [
        (["apply", "--verify", "-"], "--verify runs the script from its folder; it cannot read the source from '-'"),
        (["apply", "--verify"], "--verify needs the script to run"),
        (["apply", "--force", "x.py"], "--force only applies with --verify"),
        (["apply", "--verify", "-i", "x.py"], "--interactive and --verify cannot be combined"),
        (["apply", "--verify", "missing.py"], "missing.py"),
        (["diff", "--verify", "."], ".: is a directory; --verify takes one script"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, argv)
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, res.output
    assert os.listdir(tmp_path) == []


def test_a_folder_too_large_is_refused_and_nothing_written(project, monkeypatch):
    monkeypatch.setattr(verified, "MAX_COPY_BYTES", 100)
    monkeypatch.setattr(verified.copy_folder, "__defaults__", (100,))
    original = (project / "train.py").read_bytes()
    res = CliRunner().invoke(app, ["apply", "--verify", str(project / "train.py")])
    assert res.exit_code == 2 and "to copy for verification" in res.output and "Traceback" not in res.output
    assert (project / "train.py").read_bytes() == original


# ----------------------------------------------------------------------------- real runs
def apply_cli(folder: Path, *extra: str, args=("--epochs", "1")) -> subprocess.CompletedProcess:
    """`ddpfix apply --verify` on folder/train.py; once more (announced) when the only failure was a
    rank that crashed while exiting after finishing the script (tests/teardown.py)."""
    cmd = [sys.executable, "-m", "ddpfix", "apply", "--verify", *extra, "--timeout", str(TIMEOUT), "train.py"]
    cmd += ["--", *args]
    p = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=2 * TIMEOUT)
    fails = [ln for ln in p.stderr.splitlines() if ln.startswith("FAIL  ")]
    if fails == ["FAIL  completes: Completes on all ranks"] and "crashed while exiting" in p.stderr:
        warnings.warn(
            f"apply --verify: a rank crashed while exiting; running once more\n{p.stderr}",
            CrashAtExitRerun,
            stacklevel=2,
        )
        p = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=2 * TIMEOUT)
    return p


@pytest.mark.slow
def test_apply_verify_rewrites_the_bundled_example(tmp_path):
    shutil.copy(EXAMPLE, tmp_path / "train.py")
    expected = ddpfix.fix_source(EXAMPLE.read_bytes(), path=str(EXAMPLE)).data
    p = apply_cli(tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "train.py").read_bytes() == expected
    (line,) = [ln for ln in p.stderr.splitlines() if "verified on" in ln]
    assert "; verified on 2 processes: every rank finished, gradients all-reduced through DDP, shards disjoint" in line
    assert "parameters in sync after 8 steps, 1 writer per file" in line
    assert sorted(os.listdir(tmp_path)) == ["train.py"]  # the run wrote its checkpoint in the copy


@pytest.mark.slow
def test_apply_verify_leaves_a_failing_rewrite_untouched_and_force_writes_it(tmp_path):
    shutil.copy(SAME_BATCHES, tmp_path / "train.py")
    original = (tmp_path / "train.py").read_bytes()
    p = apply_cli(tmp_path, args=())
    assert p.returncode == 1, p.stderr
    assert (tmp_path / "train.py").read_bytes() == original
    assert "FAIL  shards: Shards disjoint and covering" in p.stderr
    assert "ranks 0 and 1 fed the same 8 training inputs to Linear's forward (train.py:" in p.stderr
    assert "train.py: not rewritten: a check failed on the rewrite" in p.stderr

    forced = apply_cli(tmp_path, "--force", args=())
    assert forced.returncode == 1 and "rewritten although a check failed (--force)" in forced.stderr
    assert (tmp_path / "train.py").read_bytes() == ddpfix.fix_source(original, path="train.py").data
