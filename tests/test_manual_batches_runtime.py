"""Hand-cut batches once sharded (DDP209), run for real: under torchrun the two ranks train on
different batches, as many of them each; a plain run of the output trains on exactly the batches the
input did. `ddpfix verify` cannot see batches that no DataLoader draws, so a small probe records the
input of every outermost forward call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from exit_without_teardown import outside_env, torchrun
from teardown import run_plain

GOLDEN = Path(__file__).resolve().parent / "golden"

PROBE = """
import atexit, json, os, runpy, sys
import torch
from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

seen, depth = [], [0]

def before(module, args):
    if depth[0] == 0 and torch.is_grad_enabled() and args and isinstance(args[0], torch.Tensor):
        seen.append([[round(v, 5) for v in row] for row in args[0].reshape(len(args[0]), -1).tolist()])
    depth[0] += 1

def after(module, args, output):
    depth[0] -= 1

register_module_forward_pre_hook(before)
register_module_forward_hook(after)

def dump():
    with open(os.path.join(os.environ["PROBE_OUT"], f"rank{os.environ.get('RANK', 0)}.json"), "w") as f:
        json.dump(seen, f)

atexit.register(dump)
script = sys.argv[1]
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
open(os.path.join(os.environ["PROBE_OUT"], f"end{os.environ.get('RANK', 0)}"), "w").close()  # reached its end
"""


def _run(tmp_path: Path, script: Path, name: str, nproc: int | None) -> dict[int, list]:
    """Runs ``script`` under the probe (under torchrun when ``nproc`` is given), once more in a fresh folder
    when every rank reached the script's end (the probe's end files say so) and a process then crashed
    while exiting (see teardown.py); the records of the run that counts."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    env = outside_env()
    if nproc is None:
        cmd = [sys.executable, str(probe), str(script)]
    else:
        cmd = torchrun(nproc, str(probe), str(script))

    folders: list[Path] = []

    def once(out: Path) -> SimpleNamespace:
        out.mkdir()
        folders.append(out)
        done = subprocess.run(cmd, cwd=out, env={**env, "PROBE_OUT": str(out)}, capture_output=True, timeout=300)
        ended = all((out / f"end{r}").exists() for r in range(nproc or 1))  # every rank reached the script's end
        return SimpleNamespace(
            returncode=done.returncode, stderr=done.stderr.decode("utf-8", "replace"), reached_end=ended
        )

    done = run_plain(once, tmp_path / name, f"{script.parent.name} {name}")
    assert done.returncode == 0, done.stderr[-3000:]
    return {int(p.stem[4:]): json.loads(p.read_text()) for p in folders[-1].glob("rank*.json")}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_permuted_batches_are_disjoint_and_even(tmp_path):
    case = GOLDEN / "manual_batches"
    plain_in = _run(tmp_path, case / "input.py", "plain_in", None)[0]
    plain_out = _run(tmp_path, case / "expected.py", "plain_out", None)[0]
    assert plain_out == plain_in and len(plain_in) == 2 * 13  # 100 samples in batches of 8, two epochs
    ranks = _run(tmp_path, case / "expected.py", "ddp", 2)
    assert sorted(ranks) == [0, 1]
    assert len(ranks[0]) == len(ranks[1]) == 2 * 6  # 13 batches an epoch: 6 each, the 13th left out
    for epoch in range(2):
        rows = [{tuple(r) for batch in ranks[k][epoch * 6 : (epoch + 1) * 6] for r in batch} for k in (0, 1)]
        assert rows[0] and rows[1] and not rows[0] & rows[1]
        assert len(rows[0]) + len(rows[1]) == 12 * 8


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_random_draws_differ_per_rank(tmp_path):
    case = GOLDEN / "random_batches"
    plain_in = _run(tmp_path, case / "input.py", "plain_in", None)[0]
    plain_out = _run(tmp_path, case / "expected.py", "plain_out", None)[0]
    assert plain_out == plain_in and len(plain_in) == 30
    ranks = _run(tmp_path, case / "expected.py", "ddp", 2)
    assert len(ranks[0]) == len(ranks[1]) == 30
    assert all(a != b for a, b in zip(ranks[0], ranks[1]))  # each rank trains on its own part of the draw
