"""DDP421 under the interleaving that breaks a cache: rank 0 is still writing the file when rank 1
tests for it. A small launcher makes that interleaving certain: rank 0's `torch.save` of the cache
leaves a partial file for six seconds before the real write, and rank 1's `os.path.exists` of the
cache answers only once the file is there (or ten seconds on), so the race fires on every run. Without DDP421's barriers the converted golden fails
(rank 1 loads the partial file); with them both ranks train on the cached features."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from exit_without_teardown import outside_env, torchrun

from ddpfix import fix_source

GOLDEN = Path(__file__).parent / "golden" / "cache_built_on_rank0_first"
CACHE = "features.cache.pt"

SLOW = f"""
import os, runpy, sys, time
import torch

real_save, real_exists = torch.save, os.path.exists

def slow_save(obj, f, *args, **kwargs):
    if f == {CACHE!r}:  # a write that takes a while: the file is there, not yet whole
        with open(f, "wb") as partial:
            partial.write(b"PK\\x03\\x04 not yet")
        time.sleep(6)
    return real_save(obj, f, *args, **kwargs)

def late_exists(path):
    if path == {CACHE!r} and os.environ.get("RANK", "0") != "0":
        deadline = time.time() + 10  # rank 1 looks once rank 0 has begun writing (or 10 s on)
        while not real_exists(path) and time.time() < deadline:
            time.sleep(0.05)
    return real_exists(path)

torch.save, os.path.exists = slow_save, late_exists
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def _race(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    (tmp_path / "slow.py").write_text(SLOW)
    (tmp_path / "train.py").write_text(code)
    cmd = torchrun(2, str(tmp_path / "slow.py"), str(tmp_path / "train.py"))
    return subprocess.run(cmd, cwd=tmp_path, env=outside_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.timeout(600)
def test_rank0_builds_the_cache_before_the_others_look(tmp_path):
    code = (GOLDEN / "expected.py").read_text()
    assert code == fix_source((GOLDEN / "input.py").read_text()).code
    done = _race(tmp_path, code)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("Producing features...") == 1 and "Loading cached" not in done.stdout
    assert [line.split()[:2] for line in done.stdout.splitlines() if line.startswith("epoch")] == [
        ["epoch", "0"],
        ["epoch", "1"],
    ]
    import torch

    assert len(torch.load(tmp_path / CACHE, weights_only=False)) == 512


@pytest.mark.timeout(600)
def test_without_the_barriers_the_same_interleaving_reads_a_partial_file(tmp_path):
    """The launcher's interleaving does break the cache: the rewrite without DDP421 fails under it."""
    code = fix_source((GOLDEN / "input.py").read_text(), ignore=["DDP421"]).code
    assert "builds the cache" not in code
    done = _race(tmp_path, code)
    assert done.returncode != 0
    assert "[rank1]: RuntimeError: PytorchStreamReader failed reading zip archive" in done.stderr, done.stderr[-3000:]
