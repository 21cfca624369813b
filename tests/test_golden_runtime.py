"""Every golden ``expected.py`` runs, both ways.

For each ``tests/golden/<case>/expected.py`` present at collection time:

1. ``python expected.py ARGS`` exits 0 (a plain single process), and prints what ``python input.py
   ARGS`` prints when the input runs (both in their own temporary working directory, so the files
   they write do not collide);
2. ``ddpfix verify expected.py --nproc 2 -- ARGS`` passes every applicable check. Scripts that import
   nothing from torch only need to run.

Per-case files: ``args.txt`` (one command-line argument per line) and runtime flags in
``options.json``: ``"runs": false`` (the expected output is not meant to run: skipped),
``"single": false`` (not runnable as a plain process: verify only), ``"verify": false`` (plain run
only), ``"compare_stdout": false`` (the plain outputs may differ).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from teardown import verify_with_one_rerun

from ddpfix.verify import verify_script

GOLDEN = Path(__file__).resolve().parent / "golden"
CASES = sorted(p.parent.name for p in GOLDEN.glob("*/expected.py"))
PLAIN_TIMEOUT = 300
VERIFY_TIMEOUT = 300
TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "GROUP_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def _cases():
    if not CASES:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no golden cases in tests/golden"))]
    return CASES


def _options(case_dir: Path) -> dict:
    p = case_dir / "options.json"
    return json.loads(p.read_text()) if p.exists() else {}


def _args(case_dir: Path) -> list[str]:
    p = case_dir / "args.txt"
    if not p.exists():
        return []
    return [line for line in p.read_text().splitlines() if line.strip()]


def _uses_torch(path: Path) -> bool:
    src = path.read_bytes().decode("utf-8", "replace")
    return re.search(r"^\s*(import\s+torch|from\s+torch[\s.])", src, re.M) is not None


def _plain(script: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARS}
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, env=env, capture_output=True, timeout=PLAIN_TIMEOUT
    )


def _describe(report) -> str:
    lines = [f"{c.status:5} {c.name}: {' / '.join(c.evidence)}" for c in report.checks]
    return "\n".join(lines) + "\n" + report.output[-4000:]


@pytest.mark.slow
@pytest.mark.timeout(3 * PLAIN_TIMEOUT + VERIFY_TIMEOUT + 120)
@pytest.mark.parametrize("case", _cases())
def test_golden_expected_runs(case, tmp_path):
    case_dir = GOLDEN / case
    expected = case_dir / "expected.py"
    opts = _options(case_dir)
    if opts.get("runs") is False:
        pytest.skip("options.json: runs=false")
    args = _args(case_dir)

    if opts.get("single", True) is not False:
        got = _plain(expected, args, tmp_path / "expected")
        assert got.returncode == 0, got.stderr.decode("utf-8", "replace")[-4000:]
        source = case_dir / "input.py"
        if source.exists() and opts.get("compare_stdout", True) is not False:
            ref = _plain(source, args, tmp_path / "input")
            if ref.returncode == 0:  # an input that cannot run on this machine has nothing to compare
                assert got.stdout.decode("utf-8", "replace") == ref.stdout.decode("utf-8", "replace")

    if opts.get("verify", True) is False or not _uses_torch(expected):
        return
    report = verify_with_one_rerun(
        lambda cwd: verify_script(expected, args, nproc=2, timeout=VERIFY_TIMEOUT, cwd=cwd), tmp_path / "verify"
    )
    assert report.ok, _describe(report)
