"""`ddpfix apply --verify` end to end on scripts of the real-script corpus (docs/realworld.md).

Each script is materialised by the corpus runner's own code (bench/realworld/run.py: its files out of
a git mirror at the manifest's commit, its patches, its offline data) in a temporary folder, and
`ddpfix apply --verify` runs on it there, under torchrun with two gloo processes. The mirrors are not
part of this repository: set DDPFIX_CORPUS_MIRRORS to a folder of them (OWNER+NAME/repo git
directories), or these tests are skipped. The scripts chosen need torch alone (no torchvision).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from teardown import CrashAtExitRerun

import ddpfix

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "realworld"
MIRRORS = os.environ.get("DDPFIX_CORPUS_MIRRORS")
TIMEOUT = 300

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not MIRRORS, reason="DDPFIX_CORPUS_MIRRORS is not set (a folder of the corpus's git mirrors, OWNER+NAME/repo)"
    ),
]


def _runner_module():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("realworld_run_for_apply_verify", BENCH / "run.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up there
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


def materialise(entry_id: str, base: Path):
    """(entry, folder the script runs from, script path relative to it, environment) of a corpus entry."""
    run = _runner_module()
    entry = next(e for e in run.load_manifest() if e["id"] == entry_id)
    runner = run.Runner(Path(MIRRORS).resolve(), sys.executable, base)
    try:
        run.git_dir(runner.mirrors, entry["repo"])
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    tree = base / entry_id
    cwd = runner.prepare(entry, tree)
    return entry, cwd, os.path.relpath(tree / entry["path"], cwd), runner.env(entry, tree)


def apply_verify(entry: dict, cwd: Path, script: str, env: dict) -> subprocess.CompletedProcess:
    """`ddpfix apply --verify` on the script with the entry's arguments; once more (announced) when the
    only failure was a rank that crashed while exiting after finishing the script (tests/teardown.py)."""
    cmd = [sys.executable, "-m", "ddpfix", "apply", "--verify", "--timeout", str(TIMEOUT), script]
    cmd += ["--", *entry.get("args", [])]
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=2 * TIMEOUT)
    fails = [ln for ln in p.stderr.splitlines() if ln.startswith("FAIL  ")]
    if fails == ["FAIL  completes: Completes on all ranks"] and "crashed while exiting" in p.stderr:
        warnings.warn(f"apply --verify: a rank crashed while exiting; once more\n{p.stderr}", CrashAtExitRerun, 2)
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=2 * TIMEOUT)
    return p


@pytest.mark.parametrize("entry_id", ["ngvideo-bigram", "ngvideo-gpt", "nlp-nnlm"])
def test_apply_verify_writes_a_corpus_script_it_proved(entry_id, tmp_path):
    entry, cwd, script, env = materialise(entry_id, tmp_path)
    original = (cwd / script).read_bytes()
    expected = ddpfix.fix_source(original, path=str(cwd / script)).data
    assert expected != original
    p = apply_verify(entry, cwd, script, env)
    assert p.returncode == 0, p.stderr[-3000:]
    assert (cwd / script).read_bytes() == expected
    (line,) = [ln for ln in p.stderr.splitlines() if "; verified on 2 processes: " in ln]
    assert "applied" in line and "every rank finished, gradients all-reduced through DDP" in line
    assert "FAIL" not in p.stderr


def test_apply_verify_leaves_a_corpus_script_that_fails_a_check_untouched(tmp_path):
    # one inline sequence is the whole training set: every rank trains on the same inputs
    entry, cwd, script, env = materialise("zerotoall-hello-rnn", tmp_path)
    original = (cwd / script).read_bytes()
    p = apply_verify(entry, cwd, script, env)
    assert p.returncode == 1, p.stderr[-3000:]
    assert (cwd / script).read_bytes() == original
    assert "FAIL  shards: Shards disjoint and covering" in p.stderr
    assert "ranks 0 and 1 fed the same" in p.stderr
    assert f"{script}: not rewritten: a check failed on the rewrite" in p.stderr
