"""Fast tests of ddpfix verify: checks on synthetic traces, stack parsing, commands, report, CLI, and
the probe in a plain process (no torch, no torchrun)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from ddpfix.verify import VerifyUsageError, checks, launcher, verify_script
from ddpfix.verify.checks import FAIL, NA, PASS, PlainRun, RunData
from ddpfix.verify.command import CONTEXT_SETTINGS, verify
from ddpfix.verify.report import render_text, summary, to_json

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


# ----------------------------------------------------------------------------- synthetic traces
@pytest.fixture
def script(tmp_path):
    """A fake training script, so that evidence can quote its lines."""
    p = tmp_path / "train.py"
    p.write_text(
        textwrap.dedent("""\
        import torch.distributed as dist
        def main():
            loader = DataLoader(ds, sampler=sampler)
            model = DDP(net)
            for epoch in range(2):
                for x, y in loader:
                    loss.backward()
                    optimizer.step()
                if rank == 0:
                    dist.barrier()  # only rank 0
                    torch.save(sd, "ckpt.pt")
        main()
        """)
    )
    return p


def S(script, line):
    return f"{script}:{line}"


def run_of(script, world=2, **kw) -> RunData:
    traces = kw.pop("traces", None)
    if traces is None:
        traces = {r: [start(r)] for r in range(world)}
    return RunData(
        script=str(script),
        cwd=str(Path(script).parent),
        world_size=world,
        nproc=world,
        traces=traces,
        duration=3.0,
        **kw,
    )


def start(r, local_rank=None, group_rank=0):
    return {
        "ev": "start",
        "rank": r,
        "local_rank": r if local_rank is None else local_rank,
        "group_rank": group_rank,
        "pid": 1000 + r,
    }


def end(r, status="ok", **kw):
    return {"ev": "end", "status": status, **kw}


def loader_ev(script, n_ds=8, **kw):
    d = {
        "ev": "loader",
        "key": S(script, 3),
        "site": S(script, 3),
        "dataset_len": n_ds,
        "iterable": False,
        "sampler": "DistributedSampler",
        "batch_size": 2,
        "drop_last": False,
        "shuffle": True,
        "full_coverage": True,
        "dist_sampler": {"num_replicas": 2, "total_size": n_ds, "drop_last": False},
    }
    d.update(kw)
    return d


def pass_ev(script, n, indices, epoch=None, complete=True, steps=1):
    return {
        "ev": "pass",
        "loader": S(script, 3),
        "n": n,
        "epoch": n if epoch is None else epoch,
        "complete": complete,
        "steps": steps,
        "indices": list(indices),
        "count": len(indices),
    }


def step_ev(script, n, sha="a", ssum=1.0, p=0):
    return {
        "ev": "step",
        "n": n,
        "loader": S(script, 3),
        "pass": p,
        "site": S(script, 8),
        "digests": [{"ddp": 0, "sha1": sha, "sum": ssum}],
    }


def ddp_ev(script, sha="init"):
    return {"ev": "ddp", "id": 0, "module": "Net", "site": S(script, 4), "digest": {"sha1": sha, "sum": 0.0}}


def good_rank(script, r, shards, epochs=2, **end_kw):
    """A rank that trained correctly over `epochs` epochs reading `shards[epoch]`."""
    ev = [start(r), ddp_ev(script), loader_ev(script)]
    n = 0
    for e in range(epochs):
        ev.append(pass_ev(script, e, shards[e], steps=2))
        for _ in range(2):
            n += 1
            ev.append(step_ev(script, n, sha=f"s{n}", p=e))
    ev.append({"ev": "coll", "n": 1, "op": "ddp.allreduce", "group": "world", "shape": [10], "dtype": "float32"})
    ev.append(end(r, steps=n, digests=[{"ddp": 0, "sha1": "final", "sum": 2.0}], ddp_forwards={"0": n}, **end_kw))
    return ev


def good_run(script, **kw):
    traces = {
        0: good_rank(script, 0, [[0, 2, 4, 6], [1, 3, 5, 7]]),
        1: good_rank(script, 1, [[1, 3, 5, 7], [0, 2, 4, 6]]),
    }
    return run_of(script, traces=traces, **kw)


def test_good_run_passes_every_check(script):
    report = checks.evaluate(good_run(script))
    status = {c.name: c.status for c in report.checks}
    assert status == {
        "completes": PASS,
        "ddp": PASS,
        "shards": PASS,
        "epoch_order": PASS,
        "params": PASS,
        "files": NA,
        "collectives": PASS,
        "probe": PASS,
        "single": NA,
    }
    assert report.ok
    assert "union 8/8" in report["shards"].evidence[0]
    assert "after the wrap, after each of 4 optimizer steps and at exit" in report["params"].evidence[0]
    compared = {c.name: c.compared for c in report.checks}
    assert compared["completes"] == {"ranks": 2} and compared["ddp"] == {"ranks": 2, "steps": 4}
    assert compared["shards"] == {"passes": 2, "indices": 16}
    assert compared["epoch_order"] == {"passes": 4, "indices": 8}
    assert compared["params"] == {"ranks": 2, "steps": 4, "checksums": 6}
    assert compared["collectives"] == {"ranks": 2, "collectives": 1}
    assert compared["files"] == {} and compared["single"] == {}
    data = json.loads(json.dumps(report.to_dict()))
    assert data["checks"][2]["compared"] == {"passes": 2, "indices": 16}


# ----------------------------------------------------------------------------- completes
DUMP = """\
Thread 0x00007f0000000001 (most recent call first):
  File "{lib}/threading.py", line 324 in wait
  File "{lib}/threading.py", line 1002 in _bootstrap

Current thread 0x00007f0000000002 (most recent call first):
  File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4800 in barrier
  File "/venv/lib/python3.11/site-packages/torch/distributed/c10d_logger.py", line 83 in wrapper
  File "{probe}", line 300 in wrapper
  File "{script}", line 10 in main
  File "{script}", line 12 in <module>
  File "{lib}/runpy.py", line 88 in _run_code
  File "{probe}", line 800 in main
"""


def dump_for(script, line=10, func="main"):
    import sysconfig

    text = DUMP.format(lib=sysconfig.get_paths()["stdlib"], probe=str(ROOT / "ddpfix/verify/probe.py"), script=script)
    return text.replace("line 10 in main", f"line {line} in {func}")


def test_parse_stack_dump_and_wait_point(script):
    threads = launcher.parse_stack_dump(dump_for(script))
    assert len(threads) == 2 and threads[1]["current"]
    assert threads[1]["frames"][0] == {
        "file": "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py",
        "line": 4800,
        "func": "barrier",
    }
    run = run_of(script)
    site, callee = checks.wait_point(threads, run)
    assert site == f"{script}:10" and callee == "barrier"


def test_completes_names_where_each_rank_waits_on_timeout(script):
    hung_in_backward = dump_for(script, line=7).replace("in barrier", "in backward")
    run = run_of(
        script,
        timed_out=True,
        returncode=None,
        timeout=20,
        stacks={0: launcher.parse_stack_dump(dump_for(script)), 1: launcher.parse_stack_dump(hung_in_backward)},
    )
    c = checks.check_completes(run)
    assert c.status == FAIL
    assert "no result within the 20 s limit" in c.evidence[0]
    assert "rank 0 waits in `dist.barrier()` at train.py:10 (in barrier())" in c.evidence
    assert "rank 1 waits in `loss.backward()` at train.py:7 (in backward())" in c.evidence


def test_completes_reports_finished_and_raising_ranks(script):
    traces = {
        0: [
            start(0),
            end(
                0,
                "error",
                error="RuntimeError",
                site=S(script, 10),
                message="[/__w/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer",
            ),
        ],
        1: [start(1), end(1)],
    }
    c = checks.check_completes(run_of(script, traces=traces, returncode=1))
    assert c.status == FAIL
    assert c.evidence == [
        "rank 0 raised RuntimeError at `dist.barrier()` at train.py:10: Connection closed by peer",
        "rank 1 finished",
    ]


def test_completes_when_torchrun_fails_before_the_script(script):
    run = run_of(
        script,
        traces={},
        returncode=1,
        output="--- stderr ---\nTraceback...\nModuleNotFoundError: No module named 'ddpfix'\n",
    )
    c = checks.check_completes(run)
    assert c.status == FAIL
    assert "before any rank ran the script: ModuleNotFoundError: No module named 'ddpfix'" in c.evidence[0]
    assert "rank 0 never started the script" in c.evidence


def test_completes_stopped_by_torchrun_and_exit_code(script):
    traces = {0: [start(0), end(0, "exit", code=3)], 1: [start(1)]}
    run = run_of(
        script, traces=traces, returncode=3, term_stacks={1: launcher.parse_stack_dump(dump_for(script, line=7))}
    )
    c = checks.check_completes(run)
    assert "rank 0 exited with code 3" in c.evidence
    assert any(e.startswith("rank 1 was stopped by torchrun in `loss.backward()` at train.py:7") for e in c.evidence)


def test_completes_names_a_crash_after_the_script_finished(script):
    """A rank that ended the script and then aborted while exiting is told apart from a clean finish."""
    crash = "Fatal Python error: Aborted\n\nCurrent thread 0x00007f (most recent call first):\n  <no Python frame>\n"
    run = run_of(
        script,
        traces={0: [start(0), end(0)], 1: [start(1), end(1)]},
        returncode=1,
        crashes={1: crash},
        output="--- stderr ---\nterminate called without an active exception\n",
    )
    c = checks.check_completes(run)
    assert c.status == FAIL
    assert c.evidence == [
        "rank 1 finished the script, then its process crashed while exiting (Fatal Python error: Aborted; "
        "terminate called without an active exception): a crash in shutdown code (the interpreter's or a library's), "
        "after the script's last line",
        "rank 0 finished",
    ]
    assert c.data["ranks"] == {0: "finished", 1: "exit_crash"}
    assert checks.rank_state(run_of(script, traces={0: [start(0), end(0)]}, crashes={}), 0)["state"] == "finished"
    # the same dump with torchrun exiting 0 was written by a forked child (a DataLoader worker)
    clean = run_of(script, traces={0: [start(0), end(0)], 1: [start(1), end(1)]}, returncode=0, crashes={1: crash})
    assert checks.check_completes(clean).status == PASS


# ----------------------------------------------------------------------------- shards
def shards_run(script, sets, world=2, loader=None, complete=True, steps=1, **kw):
    traces = {}
    for r in range(world):
        ev = [start(r), loader or loader_ev(script)]
        for e, idx in enumerate(sets[r]):
            ev.append(pass_ev(script, e, idx, complete=complete, steps=steps))
        traces[r] = ev
    return run_of(script, world=world, traces=traces, **kw)


def test_shards_overlap_names_indices_ranks_and_epoch(script):
    run = shards_run(script, {0: [[0, 1, 2, 3, 4, 5, 6, 7]], 1: [[7, 6, 5, 4, 3, 2, 1, 0]]})
    c = checks.check_shards(run)
    assert c.status == FAIL
    assert c.evidence[0] == (
        "loader at train.py:3, epoch 0: indices {0, 1, 2} and 5 more on ranks 0 and 1; "
        "the ranks read 16 samples but only 8 distinct ones"
    )


def test_shards_allow_distributed_sampler_padding(script):
    loader = loader_ev(script, n_ds=7, dist_sampler={"num_replicas": 2, "total_size": 8, "drop_last": False})
    ok = shards_run(script, {0: [[0, 2, 4, 6]], 1: [[1, 3, 5, 0]]}, loader=loader)
    c = checks.check_shards(ok)
    assert c.status == PASS and "1 repeated by DistributedSampler padding" in c.evidence[0]
    bad = shards_run(script, {0: [[0, 2, 4, 6]], 1: [[0, 2, 5, 1]]}, loader=loader)
    c = checks.check_shards(bad)
    assert c.status == FAIL and "padding allows 1" in c.evidence[0]


def test_shards_coverage(script):
    run = shards_run(script, {0: [[0, 2]], 1: [[1, 3]]})
    c = checks.check_shards(run)
    assert c.status == FAIL and "the ranks together read 4 of 8 samples; never read: {4, 5, 6}" in c.evidence[0]
    # an early `break` leaves the pass incomplete: only disjointness is judged
    assert checks.check_shards(shards_run(script, {0: [[0, 2]], 1: [[1, 3]]}, complete=False)).status == PASS
    # DataLoader(drop_last=True) may leave up to world*(batch_size-1) samples unread
    loader = loader_ev(script, drop_last=True, batch_size=3)
    assert checks.check_shards(shards_run(script, {0: [[0, 2, 4]], 1: [[1, 3, 5]]}, loader=loader)).status == PASS


def test_shards_of_a_sampler_drawing_with_replacement_judge_the_streams(script):
    loader = loader_ev(script, sampler="RandomSampler", dist_sampler=None, full_coverage=False, replacement=True)
    # each rank its own stream: indices repeat across ranks by chance, which is no failure
    own = shards_run(script, {0: [[3, 1, 3, 6]], 1: [[5, 1, 0, 7]]}, loader=loader)
    c = checks.check_shards(own)
    assert c.status == PASS and "drawn with replacement, a different stream on each rank" in c.evidence[0]
    # one seed on every rank: the same stream
    same = shards_run(script, {0: [[3, 1, 3, 6]], 1: [[3, 1, 3, 6]]}, loader=loader)
    c = checks.check_shards(same)
    assert c.status == FAIL and "ranks 0 and 1 drew the same 4 indices in the same order" in c.evidence[0]
    # without replacement the same overlap is a failure
    plain = loader_ev(script, sampler="RandomSampler", dist_sampler=None, full_coverage=True)
    assert checks.check_shards(shards_run(script, {0: [[3, 1, 2, 6]], 1: [[5, 1, 0, 7]]}, loader=plain)).status == FAIL


def test_shards_of_a_subset_split_apart_by_rank(script):
    """Disjoint positions of a Subset that holds different samples on each rank (an unseeded
    random_split) fail; the same Subset on every rank, or no Subset, is judged by the positions."""

    def split_run(digests):
        traces = {}
        for r, digest in enumerate(digests):
            ev = [start(r), loader_ev(script, subset=digest)]
            ev.append(pass_ev(script, 0, [0, 2, 4, 6] if r == 0 else [1, 3, 5, 7]))
            traces[r] = ev
        return run_of(script, traces=traces)

    c = checks.check_shards(split_run(["a1", "b2"]))
    assert c.status == FAIL
    assert c.evidence[0].endswith(
        "its dataset is a Subset of different samples on ranks 0 and 1 (a random_split with no shared seed?): "
        "the ranks' shards overlap in the underlying dataset"
    )
    assert checks.check_shards(split_run(["a1", "a1"])).status == PASS
    assert checks.check_shards(split_run([None, None])).status == PASS


def test_shards_not_applicable(script):
    assert checks.check_shards(run_of(script)).status == NA
    evaluation = shards_run(script, {0: [[0, 1]], 1: [[0, 1]]}, steps=0)
    c = checks.check_shards(evaluation)
    assert c.status == NA and "evaluation passes not judged" in c.evidence[0]
    assert checks.check_shards(shards_run(script, {0: [[0]]}, world=1)).status == NA
    iterable = shards_run(script, {0: [[]], 1: [[]]}, loader=loader_ev(script, iterable=True))
    assert checks.check_shards(iterable).status == NA


def test_training_passes_come_from_step_events(script):
    # a loader with workers draws every index before the first step: the pass event says steps=0
    run = shards_run(script, {0: [[0, 1, 2, 3, 4, 5, 6, 7]], 1: [[0, 1, 2, 3, 4, 5, 6, 7]]}, steps=0)
    for r in (0, 1):
        run.traces[r].append(step_ev(script, 1))
    assert checks.check_shards(run).status == FAIL


# ----------------------------------------------------------------------------- epoch order
def test_epoch_order_same_order_fails_with_set_epoch_hint(script):
    run = shards_run(script, {0: [[0, 6, 2, 4], [0, 6, 2, 4]], 1: [[1, 7, 3, 5], [1, 7, 3, 5]]})
    for r in (0, 1):  # sampler epoch stayed 0
        for e in run.traces[r]:
            if e["ev"] == "pass":
                e["epoch"] = 0
    c = checks.check_epoch_order(run)
    assert c.status == FAIL
    assert c.evidence[0].startswith(
        "loader at train.py:3: ranks 0 and 1 read the same order in epochs 0 and 1 "
        "(DistributedSampler.epoch was 0 both times"
    )


def test_epoch_order_pass_and_not_applicable(script):
    ok = shards_run(script, {0: [[0, 6, 2, 4], [4, 2, 0, 6]], 1: [[1, 7, 3, 5], [5, 1, 7, 3]]})
    assert checks.check_epoch_order(ok).status == PASS
    seq = shards_run(
        script,
        {0: [[0, 2, 4, 6], [0, 2, 4, 6]], 1: [[1, 3, 5, 7], [1, 3, 5, 7]]},
        loader=loader_ev(script, shuffle=False, sampler="SequentialSampler"),
    )
    c = checks.check_epoch_order(seq)
    assert c.status == NA and "does not shuffle" in c.evidence[0]
    once = shards_run(script, {0: [[0, 2, 4, 6]], 1: [[1, 3, 5, 7]]})
    assert checks.check_epoch_order(once).status == NA


# ----------------------------------------------------------------------------- params
def params_run(script, shas0, shas1, final=("f", "f")):
    traces = {}
    for r, shas in ((0, shas0), (1, shas1)):
        ev = [start(r), ddp_ev(script)]
        for n, sha in enumerate(shas, 1):
            ev.append(step_ev(script, n, sha=sha, ssum=float(n + r * len(sha))))
        ev.append(end(r, steps=len(shas), digests=[{"ddp": 0, "sha1": final[r], "sum": 0.0}], ddp_forwards={"0": 1}))
        traces[r] = ev
    return run_of(script, traces=traces)


def test_params_names_first_diverging_step(script):
    c = checks.check_params(params_run(script, ["a", "b", "c", "d"], ["a", "b", "X", "Y"], final=("f", "g")))
    assert c.status == FAIL
    assert c.evidence[0].startswith(
        "parameters of Net first differ after optimizer step 3 of 4 (`optimizer.step()` at train.py:8): rank 0 sum"
    )
    assert c.data["first_step"] == 3


def test_params_step_counts_and_exit(script):
    c = checks.check_params(params_run(script, ["a", "b", "c"], ["a", "b"]))
    assert c.status == FAIL and c.evidence == ["optimizer steps differ: rank 0 took 3, rank 1 took 2"]
    c = checks.check_params(params_run(script, ["a"], ["a"], final=("f", "g")))
    assert c.status == FAIL and c.evidence[0].startswith("parameters of Net differ at exit")
    assert checks.check_params(params_run(script, ["a"], ["a"])).status == PASS
    assert checks.check_params(run_of(script)).status == NA


def outside_run(script, shas0, shas1, opts=("SGD",)):
    """DDP-wrapped parameters equal at every step; `shas*`: the digests of the parameters the optimizers
    `opts` step outside DDP, one per step and optimizer."""
    run = params_run(script, ["a"] * len(shas0), ["a"] * len(shas1))
    for r, shas in ((0, shas0), (1, shas1)):
        steps = [e for e in run.traces[r] if e["ev"] == "step"]
        for e, sha in zip(steps, shas):
            e["opt"] = opts[(e["n"] - 1) % len(opts)]
            e["outside"] = [{"opt": (e["n"] - 1) % len(opts), "sha1": sha, "sum": 1.5, "numel": 9, "tensors": 2}]
    return run


def test_params_compares_what_an_optimizer_steps_outside_ddp(script):
    """A model wrapped in part: the wrapped module stays equal, the rest of what the optimizer steps does not."""
    c = checks.check_params(outside_run(script, ["a", "b", "c"], ["a", "X", "Y"]))
    assert c.status == FAIL, c.evidence
    assert c.evidence[0].startswith(
        "parameters stepped by SGD outside every DistributedDataParallel wrapper (2 tensors, 9 values) first "
        "differ after optimizer step 2 of 3 (`optimizer.step()` at train.py:8): rank 0 sum 1.5 (sha1 b), rank 1"
    )
    assert c.data["first_step"] == 2
    same = checks.check_params(outside_run(script, ["a", "b"], ["a", "b"]))
    assert same.status == PASS, same.evidence
    assert same.evidence == [
        "Net: parameters (and those SGD steps outside DDP) equal on 2 ranks after the wrap, after each of 2 "
        "optimizer steps and at exit"
    ]
    assert same.compared["checksums"] == 1 + 2 * 2 + 1
    two = checks.check_params(outside_run(script, ["a", "b"], ["a", "X"], opts=("SGD", "Adam")))
    assert two.evidence[0].startswith("parameters stepped by Adam #2 outside every DistributedDataParallel")


# ----------------------------------------------------------------------------- ddp
def test_ddp_missing_or_bypassed(script):
    traces = {r: [start(r), step_ev(script, 1), end(r, steps=1)] for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL and "no DistributedDataParallel was constructed" in c.evidence[0]
    traces = {r: [start(r), ddp_ev(script), step_ev(script, 1), end(r, steps=1, ddp_forwards={"0": 0})] for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL
    assert "never ran forward on ranks 0 and 1, which took 1 optimizer step" in c.evidence[0]
    assert checks.check_ddp(run_of(script)).status == NA


# ----------------------------------------------------------------------------- files
def test_files_written_by_several_ranks(script, tmp_path):
    path = str(tmp_path / "ckpt.pt")
    traces = {r: [start(r), {"ev": "write", "api": "torch.save", "path": path, "site": S(script, 11)}] for r in (0, 1)}
    traces[0].append({"ev": "write", "api": "logging.FileHandler", "path": str(tmp_path / "train.log"), "site": None})
    c = checks.check_files(run_of(script, traces=traces))
    assert c.status == FAIL
    assert c.evidence == ["ckpt.pt written by ranks [0, 1] (torch.save at train.py:11)"]


def test_files_local_rank_hint_and_pass(script, tmp_path):
    path = str(tmp_path / "ckpt.pt")
    traces = {
        r: [
            start(r, local_rank=0, group_rank=r),
            {"ev": "write", "api": "torch.save", "path": path, "site": S(script, 11)},
        ]
        for r in (0, 1)
    }
    run = run_of(script, traces=traces)
    run.nnodes, run.nproc = 2, 1
    c = checks.check_files(run)
    assert "each is LOCAL_RANK 0 on its node" in c.evidence[0]
    traces[1] = [start(1)]
    c = checks.check_files(run_of(script, traces=traces))
    assert c.status == PASS and "ckpt.pt (rank 0)" in c.evidence[0]
    assert checks.check_files(run_of(script)).status == NA


# ----------------------------------------------------------------------------- collectives
def coll(op, site=None, group="world", **kw):
    return {"ev": "coll", "op": op, "group": group, "site": site, **kw}


def test_collectives_mismatch(script):
    traces = {
        0: [start(0), coll("ddp.allreduce", shape=[10], dtype="float32"), coll("barrier", S(script, 10))],
        1: [
            start(1),
            coll("ddp.allreduce", shape=[10], dtype="float32"),
            coll("ddp.allreduce", S(script, 7), shape=[10], dtype="float32"),
        ],
    }
    c = checks.check_collectives(run_of(script, traces=traces))
    assert c.status == FAIL
    assert c.evidence[0] == (
        "collective #2 on the default group differs: rank 0 issued barrier at `dist.barrier()` "
        "at train.py:10; rank 1 issued ddp.allreduce (10 float32) at `loss.backward()` at train.py:7"
    )
    traces[1] = traces[1][:2]
    c = checks.check_collectives(run_of(script, traces=traces))
    assert "rank 1 issued none (it issued 1 in all)" in c.evidence[0]


def test_collectives_groups_and_p2p(script):
    traces = {
        0: [
            start(0),
            coll("all_reduce", shape=[1], dtype="float32", reduce_op="SUM"),
            coll("send", p2p=True),
            coll("broadcast", group="ranks0,1", shape=[2], dtype="int64"),
        ],
        1: [
            start(1),
            coll("all_reduce", shape=[1], dtype="float32", reduce_op="SUM"),
            coll("recv", p2p=True),
            coll("broadcast", group="ranks0,1", shape=[2], dtype="int64"),
        ],
        2: [start(2), coll("all_reduce", shape=[1], dtype="float32", reduce_op="SUM")],
    }
    c = checks.check_collectives(run_of(script, world=3, traces=traces))
    assert c.status == PASS, c.evidence
    traces[2][1]["reduce_op"] = "MAX"
    assert checks.check_collectives(run_of(script, world=3, traces=traces)).status == FAIL
    assert checks.check_collectives(run_of(script)).status == NA


# ----------------------------------------------------------------------------- single
def test_single(script):
    run = good_run(script)
    assert checks.check_single(run).status == NA
    run.single = True
    run.plain = PlainRun("python train.py", 0, False, 1.5)
    assert checks.check_single(run).status == PASS
    run.plain = PlainRun("python train.py", 1, False, 1.5, stderr="Traceback\nValueError: boom\n")
    c = checks.check_single(run)
    assert c.status == FAIL and c.evidence == ["`python train.py` exited with code 1: ValueError: boom"]
    run.plain = PlainRun("python train.py", None, True, 9.0)
    assert checks.check_single(run).status == FAIL


def test_a_crashing_check_does_not_hide_the_others(script, monkeypatch):
    def boom(run):
        raise KeyError("x")

    monkeypatch.setattr(checks, "CHECKS", (checks.check_completes, boom))
    report = checks.evaluate(good_run(script))
    assert [c.status for c in report.checks] == [PASS, FAIL]
    assert "the check itself failed" in report.checks[1].evidence[0]


def test_helpers():
    assert checks.strip_comment("dist.barrier()  # only rank 0") == "dist.barrier()"
    assert checks.strip_comment('print("# not a comment")') == 'print("# not a comment")'
    assert checks.fmt_set(range(10)) == "{0, 1, 2} and 7 more"
    assert (
        checks.short_message("Got error: [/a/b/unbound_buffer.cc:78] Timed out waiting")
        == "Got error: Timed out waiting"
    )


# ----------------------------------------------------------------------------- launcher pieces
def test_torchrun_commands():
    (one,) = launcher.torchrun_commands("train.py", ["--epochs", "1"], nproc=2, nnodes=1, python="py")
    assert one == [
        "py",
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        str(ROOT / "ddpfix/verify/probe.py"),
        "--",
        "train.py",
        "--epochs",
        "1",
    ]
    two = launcher.torchrun_commands("train.py", [], nproc=1, nnodes=2, python="py", port=29999)
    assert len(two) == 2
    for i, cmd in enumerate(two):
        assert f"--node-rank={i}" in cmd and "--nnodes=2" in cmd and "--master-addr=127.0.0.1" in cmd
        assert "--master-port=29999" in cmd and cmd[-3:] == [str(ROOT / "ddpfix/verify/probe.py"), "--", "train.py"]


def test_probe_env_adds_one_variable():
    env = launcher._probe_env({"PYTHONPATH": "/x"}, "/run", "gloo", 12.0)
    cfg = json.loads(env.pop("DDPFIX_VERIFY_PROBE"))
    assert cfg["run_dir"] == "/run" and cfg["backend"] == "gloo" and cfg["pg_timeout"] == 12.0
    assert env == {"PYTHONPATH": "/x"}
    assert json.loads(launcher._probe_env({}, "/run", "auto", None)["DDPFIX_VERIFY_PROBE"])["backend"] is None


def test_verify_script_input_errors(tmp_path):
    with pytest.raises(VerifyUsageError, match="script not found"):
        verify_script(tmp_path / "missing.py")
    with pytest.raises(VerifyUsageError, match="not a file"):
        verify_script(tmp_path)
    (tmp_path / "t.py").write_text("")
    with pytest.raises(VerifyUsageError, match="unknown backend"):
        verify_script(tmp_path / "t.py", backend="mpi")
    with pytest.raises(VerifyUsageError, match="at least 1"):
        verify_script(tmp_path / "t.py", nproc=0)
    with pytest.raises(VerifyUsageError, match="positive"):
        verify_script(tmp_path / "t.py", timeout=0)


# ----------------------------------------------------------------------------- report
def _fail_report(script, tmp_path):
    path = str(tmp_path / "ckpt.pt")
    run = good_run(script)
    for r in (0, 1):
        run.traces[r].insert(1, {"ev": "write", "api": "torch.save", "path": path, "site": S(script, 11)})
    run.output = "--- stderr ---\nsome torchrun noise\n"
    return checks.evaluate(run)


def test_text_report(script, tmp_path):
    report = _fail_report(script, tmp_path)
    console = Console(record=True, width=200, force_terminal=False)
    render_text(report, console=console)
    text = console.export_text()
    assert "Each file written by one rank" in text and "FAIL" in text
    assert "ckpt.pt written by ranks [0, 1]" in text  # brackets survive (no markup)
    assert "some torchrun noise" in text  # torchrun output shown on failure
    assert summary(report) == "FAILED: files (1 of 8 applicable checks failed; 1 not applicable)"
    ok = checks.evaluate(good_run(script))
    console = Console(record=True, width=200)
    render_text(ok, console=console)
    assert "torchrun" not in console.export_text()


def test_text_report_is_a_check_a_line_with_evidence_below_at_80_columns(script, tmp_path):
    """Piped or in a narrow terminal: every check starts a line of its own, its evidence is indented
    below it, and no line is longer than the terminal (nothing squeezed into a narrow column)."""
    report = _fail_report(script, tmp_path)
    report.get("files").evidence.append("x" * 150)  # a long line wraps under its indent, not into a column
    console = Console(record=True, width=80, force_terminal=False)
    render_text(report, console=console)
    lines = console.export_text().splitlines()
    assert all(len(line) <= 80 for line in lines)
    heads = [line for line in lines if line[:6] in ("PASS  ", "FAIL  ", "n/a   ")]
    assert [h.split()[1].rstrip(":") for h in heads] == [c.name for c in report.checks]
    files = lines.index("FAIL  files: Each file written by one rank")
    assert lines[files + 1] == "      compared: 1 file, 2 ranks"
    assert lines[files + 2].startswith("      ckpt.pt written by ranks [0, 1] (torch.save at train.py:11)")
    assert lines[files + 3] == "      " + "x" * 74 and lines[files + 4] == "      " + "x" * 74
    assert not any(ch in "".join(lines) for ch in "│┃┏")  # no table


def test_json_report(script, tmp_path):
    data = json.loads(to_json(_fail_report(script, tmp_path)))
    assert data["ok"] is False
    files = next(c for c in data["checks"] if c["name"] == "files")
    assert files["status"] == "fail" and files["data"]["files"][str(tmp_path / "ckpt.pt")] == [0, 1]


# ----------------------------------------------------------------------------- CLI
def _app():
    app = typer.Typer()
    app.command("verify", context_settings=CONTEXT_SETTINGS)(verify)

    @app.command("other")
    def other():  # a second command, so that `verify` is a subcommand as in the real CLI
        pass

    return app


@pytest.fixture
def fake_verify(monkeypatch, script, tmp_path):
    calls = []

    def fake(path, args=(), **kw):
        calls.append((path, list(args), kw))
        if "--fail" in args:
            return _fail_report(script, tmp_path)
        return checks.evaluate(good_run(script))

    monkeypatch.setattr("ddpfix.verify.command.verify_script", fake)
    return calls


def test_cli_passes_script_args_and_options(fake_verify):
    r = CliRunner().invoke(
        _app(),
        [
            "verify",
            "train.py",
            "--nproc",
            "3",
            "--timeout",
            "20",
            "--backend",
            "gloo",
            "--single",
            "--",
            "--epochs",
            "1",
            "--nproc",
            "9",
        ],
    )
    assert r.exit_code == 0, r.output
    path, args, kw = fake_verify[0]
    assert path == "train.py" and args == ["--epochs", "1", "--nproc", "9"]
    assert kw["nproc"] == 3 and kw["timeout"] == 20 and kw["backend"] == "gloo" and kw["single"] is True
    assert "OK: all" in r.output


def test_cli_unknown_options_go_to_the_script_too(fake_verify):
    r = CliRunner().invoke(_app(), ["verify", "train.py", "--epochs", "2", "--nnodes", "2"])
    assert r.exit_code == 0, r.output
    path, args, kw = fake_verify[0]
    assert args == ["--epochs", "2"] and kw["nnodes"] == 2 and kw["nproc"] is None


def test_cli_exit_codes_and_json(fake_verify):
    r = CliRunner().invoke(_app(), ["verify", "train.py", "--format", "json", "--", "--fail"])
    assert r.exit_code == 1
    assert json.loads(r.stdout)["ok"] is False
    r = CliRunner().invoke(_app(), ["verify", "train.py", "--backend", "mpi"])
    assert r.exit_code == 2


def test_cli_missing_script_is_one_line_exit_2(tmp_path):
    r = CliRunner().invoke(_app(), ["verify", str(tmp_path / "nope.py")])
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [f"ddpfix verify: error: script not found: {tmp_path / 'nope.py'}"]
    assert "Traceback" not in r.output


# ----------------------------------------------------------------------------- probe, plain process, no torch
def run_probe(tmp_path, source, args=(), env_extra=None, as_module=False):
    script = tmp_path / "s" / "script.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(textwrap.dedent(source))
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    env = dict(os.environ)
    env.pop("RANK", None)
    env.update(launcher._probe_env(env, str(run_dir), "auto", None))
    env.update(env_extra or {})
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    probe = ["-m", "ddpfix.verify.probe"] if as_module else [launcher.PROBE_FILE]
    p = subprocess.run(
        [PY, *probe, "../s/script.py", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )
    return p, launcher.read_traces(str(run_dir)).get(0, []), cwd


def test_probe_runs_like_a_plain_python_run(tmp_path):
    p, trace, cwd = run_probe(
        tmp_path,
        """\
        import json, os, sys
        print(json.dumps({"argv": sys.argv, "file": __file__, "name": __name__, "path0": sys.path[0],
                          "cwd": os.getcwd(), "env": "DDPFIX_VERIFY_PROBE" in os.environ,
                          "pythonpath": os.environ.get("PYTHONPATH"),
                          "loaded": sorted(m for m in ("torch", "ddpfix", "libcst") if m in sys.modules)}))
        with open("out.txt", "w") as f:
            f.write("x")
        with open("out.txt") as f:
            f.read()
        """,
        args=["--epochs", "1"],
        env_extra={"PYTHONPATH": ""},
    )
    assert p.returncode == 0, p.stderr
    seen = json.loads(p.stdout)
    assert seen["argv"] == ["../s/script.py", "--epochs", "1"]
    assert seen["file"] == str(tmp_path / "s" / "script.py") and seen["name"] == "__main__"
    assert seen["path0"] == str(tmp_path / "s") and seen["cwd"] == str(cwd)
    assert seen["env"] is False and seen["loaded"] == []
    assert seen["pythonpath"] == ""
    kinds = [e["ev"] for e in trace]
    assert kinds[0] == "start" and kinds[-1] == "end"
    writes = [e for e in trace if e["ev"] == "write"]
    assert [(w["api"], w["path"]) for w in writes] == [("open", str(cwd / "out.txt"))]
    assert writes[0]["site"] == f"{tmp_path / 's' / 'script.py'}:6"


def test_probe_runs_as_a_module_too(tmp_path):
    p, trace, _ = run_probe(tmp_path, "import sys\nprint(sys.argv)\n", args=["a"], as_module=True)
    assert p.returncode == 0 and p.stdout.strip() == "['../s/script.py', 'a']"
    assert trace[0]["ev"] == "start" and trace[-1]["status"] == "ok"


def test_probe_keeps_exit_codes_and_records_errors(tmp_path):
    p, trace, _ = run_probe(tmp_path, "import sys\nsys.exit(3)\n")
    assert p.returncode == 3 and trace[-1]["status"] == "exit" and trace[-1]["code"] == 3
    p, trace, _ = run_probe(tmp_path, "def f():\n    raise ValueError('boom')\nf()\n")
    assert p.returncode == 1 and "ValueError: boom" in p.stderr
    end_ev = trace[-1]
    assert end_ev["status"] == "error" and end_ev["error"] == "ValueError" and end_ev["message"] == "boom"
    assert end_ev["site"].endswith("script.py:2")


def test_probe_and_package_import_light():
    # the probe file alone: standard library only
    code = (
        "import sys, importlib.util as u; s = u.spec_from_file_location('p', sys.argv[1]); m = u.module_from_spec(s);"
        "s.loader.exec_module(m); print(sorted(k for k in sys.modules if k.split('.')[0] in"
        " ('torch', 'typer', 'rich', 'libcst', 'ddpfix', 'numpy')))"
    )
    out = subprocess.run([PY, "-c", code, launcher.PROBE_FILE], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # the verify package (used by the API and the tests) does not need typer, rich or torch
    code = (
        "import sys, ddpfix.verify.checks, ddpfix.verify.launcher;"
        "print(sorted(m for m in ('torch', 'typer', 'rich') if m in sys.modules))"
    )
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_params_sampled_digests_say_when_last_equal(script):
    run = params_run(script, ["a", "b", "c", "d", "e"], ["a", "b", "c", "X", "Y"])
    for r in (0, 1):  # steps 3 and 4 were not digested (time budget)
        for e in run.traces[r]:
            if e["ev"] == "step" and e["n"] in (3, 4):
                e.pop("digests")
    c = checks.check_params(run)
    assert c.status == FAIL and c.evidence[0].startswith(
        "parameters of Net first differ after optimizer step 5 of 5 (`optimizer.step()` at train.py:8, equal after step 2)"
    )


def test_a_rerun_after_a_crash_at_exit_keeps_both_reports_and_warns(script, tmp_path):
    from teardown import CrashAtExitRerun, verify_with_reruns

    ended = {0: [start(0), end(0)], 1: [start(1), end(1)]}
    crashed = run_of(script, traces=ended, returncode=1, crashes={1: "Fatal Python error: Aborted"})
    reports = iter([checks.evaluate(crashed), checks.evaluate(good_run(script))])
    with pytest.warns(
        CrashAtExitRerun, match=r"^golden x: a rank crashed while exiting .*\(rank 1 finished the script"
    ):
        runs = verify_with_reruns(lambda cwd: next(reports), tmp_path / "run", "golden x")
    assert len(runs.reports) == 2 and runs.first["completes"].data["ranks"][1] == "exit_crash" and runs.last.ok
    assert runs.describe().startswith("run 1 (rerun after a crash at exit): rank 1 finished the script")
    assert (tmp_path / "run").is_dir() and (tmp_path / "run-again").is_dir()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        once = verify_with_reruns(lambda cwd: checks.evaluate(good_run(script)), tmp_path / "once")
    assert len(once.reports) == 1


def test_reruns_stop_after_the_limit_and_the_last_report_counts(script, tmp_path):
    from teardown import MAX_RERUNS, CrashAtExitRerun, verify_with_reruns

    ended = {0: [start(0), end(0)], 1: [start(1), end(1)]}
    crashed = run_of(script, traces=ended, returncode=1, crashes={1: "Fatal Python error: Aborted"})
    calls = []

    def run(cwd):
        calls.append(cwd)
        return checks.evaluate(crashed)

    with pytest.warns(CrashAtExitRerun):
        runs = verify_with_reruns(run, tmp_path / "run", "golden y")
    assert len(calls) == MAX_RERUNS + 1 == len(runs.reports) and len(set(calls)) == len(calls)
    assert not runs.last.ok and runs.last["completes"].data["ranks"][1] == "exit_crash"


def test_a_plain_run_is_repeated_only_when_its_end_record_says_the_script_ended(tmp_path):
    from teardown import MAX_RERUNS, CrashAtExitRerun, aborted_only_at_exit, run_plain

    def done(rc, err="", end_status=None):
        return PlainRun("python train.py", rc, False, 1.0, stdout="saved\n", stderr=err, end_status=end_status)

    abort = "terminate called without an active exception\n"
    assert MAX_RERUNS == 2
    assert aborted_only_at_exit(done(-6, abort, "ok"))
    assert not aborted_only_at_exit(done(-6, abort))  # no end record: no evidence that the script ended
    assert not aborted_only_at_exit(done(-6, abort, "error"))
    assert not aborted_only_at_exit(done(0, "", "ok"))
    assert not aborted_only_at_exit(PlainRun("python train.py", None, True, 9.0, end_status="ok"))

    results = iter([done(-6, abort, "ok"), done(0, "", "ok")])
    folders = []
    with pytest.warns(CrashAtExitRerun, match="golden z: the script reached its end, then its process crashed"):
        got = run_plain(lambda cwd: folders.append(cwd) or next(results), tmp_path / "p", "golden z")
    assert got.returncode == 0 and folders == [tmp_path / "p", tmp_path / "p-again"]

    crashing = done(-6, abort, "ok")  # a crash at exit on the last rerun too is a failure: no more runs
    calls = []
    with pytest.warns(CrashAtExitRerun):
        got = run_plain(lambda cwd: calls.append(cwd) or crashing, tmp_path / "c", "golden c")
    assert got is crashing and len(calls) == MAX_RERUNS + 1
    broken = done(1, "Traceback (most recent call last):\nValueError: x\n", "error")
    assert run_plain(lambda cwd: broken, tmp_path / "q") is broken


def test_the_plain_run_of_verify_has_the_probes_end_record(tmp_path):
    """`launcher.run_plain` runs the script through the probe: the end record tells a script that
    finished from one that did not, whatever the exit code says."""
    (tmp_path / "ok.py").write_text("import os\nprint('done')\nos._exit(3) if False else None\n")
    (tmp_path / "abort.py").write_text("import atexit, os\natexit.register(lambda: os.abort())\nprint('end')\n")
    (tmp_path / "raise.py").write_text("raise SystemExit('no')\n")
    ok = launcher.run_plain("ok.py", cwd=str(tmp_path))
    assert ok.returncode == 0 and ok.reached_end and ok.stdout == "done\n" and ok.command == "python ok.py"
    aborted = launcher.run_plain("abort.py", cwd=str(tmp_path))
    assert aborted.returncode != 0 and aborted.reached_end and aborted.stdout == "end\n"
    failed = launcher.run_plain("raise.py", cwd=str(tmp_path))
    assert failed.returncode == 1 and not failed.reached_end and failed.end_status == "exit"
    run = run_of(tmp_path / "abort.py", single=True, plain=aborted)
    (c,) = [checks.check_single(run)]
    assert c.status == FAIL and "ran the script to its end, then its process exited with code" in c.evidence[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["abort.py", "ok.py", "raise.py"]  # no trace left behind


def test_tests_rerun_only_for_a_crash_after_every_rank_finished():
    from teardown import crashed_only_at_exit

    assert crashed_only_at_exit({0: "finished", 1: "exit_crash"})
    assert crashed_only_at_exit({0: "exit_stopped", 1: "exit_crash"})
    assert not crashed_only_at_exit({0: "finished", 1: "finished"})
    assert not crashed_only_at_exit({0: "exit_stopped", 1: "finished"})
    assert not crashed_only_at_exit({0: "crashed", 1: "exit_crash"})
    assert not crashed_only_at_exit({0: "waiting", 1: "exit_crash"})


def test_completes_reads_the_signals_from_torchruns_summary(script):
    """No faulthandler dump (the abort came after Python's shutdown): torchrun's summary names the signals."""
    summary = (
        "Failures:\n[1]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 1000)  (SIGTERM)\n"
        "  traceback : Signal 15 (SIGTERM) received by PID 1000\n"
        "Root Cause (first observed failure):\n[0]:\n  rank      : 1 (local_rank: 1)\n"
        "  exitcode  : -6 (pid: 1001)  (SIGABRT)\n  traceback : Signal 6 (SIGABRT) received by PID 1001\n"
    )
    run = run_of(script, traces={0: [start(0), end(0)], 1: [start(1), end(1)]}, returncode=1, output=summary)
    c = checks.check_completes(run)
    assert c.data["ranks"] == {0: "exit_stopped", 1: "exit_crash"}
    assert c.evidence[0].startswith("rank 1 finished the script, then its process crashed while exiting (SIGABRT): ")
    assert c.evidence[1] == "rank 0 finished the script; torchrun stopped its process while it was exiting"
    killed = run_of(script, traces={0: [start(0), end(0)], 1: [start(1)]}, returncode=1, output=summary)
    assert checks.rank_state(killed, 1)["text"] == "rank 1 was ended by SIGABRT before the end of the script"


# ----------------------------------------------------------------------------- what each check compared
def test_a_pass_always_says_what_it_compared(script, tmp_path):
    """No check passes with nothing compared: over runs that give the checks little or nothing to judge."""
    lean = {r: [start(r), ddp_ev(script), step_ev(script, 1), end(r, steps=1, ddp_forwards={"0": 1})] for r in (0, 1)}
    for r in (0, 1):
        lean[r][2].pop("digests")
        lean[r][1]["digest"] = None
    runs = [good_run(script), run_of(script), run_of(script, traces=lean), _fail_report_run(script, tmp_path)]
    runs.append(run_of(script, world=1, traces={0: [start(0), end(0)]}))
    for run in runs:
        for c in checks.evaluate(run).checks:
            assert c.status != PASS or any(c.compared.values()), (c.name, c.evidence)
            assert c.status != NA or c.evidence, c.name  # n/a always says why
    with pytest.raises(checks.NothingCompared):
        checks.result("shards", PASS, "fine", {"passes": 0})


def test_a_check_that_passes_on_nothing_is_reported_as_broken(script, monkeypatch):
    monkeypatch.setattr(checks, "CHECKS", (lambda run: checks.result("shards", PASS, "looks fine"),))
    (c,) = checks.evaluate(good_run(script)).checks
    assert c.status == FAIL and "a pass with nothing compared" in c.evidence[0]


def _fail_report_run(script, tmp_path):
    run = good_run(script)
    for r in (0, 1):
        run.traces[r].insert(1, {"ev": "write", "api": "torch.save", "path": str(tmp_path / "x.pt"), "site": None})
    return run


def test_params_without_any_checksum_is_not_applicable(script):
    """Steps ran, but the probe recorded no checksum (a failed digest): nothing was compared."""
    run = params_run(script, ["a", "b"], ["a", "b"])
    for r in (0, 1):
        for e in run.traces[r]:
            e.pop("digests", None)
            if e["ev"] == "ddp":
                e["digest"] = None
    c = checks.check_params(run)
    assert c.status == NA and c.evidence == ["Net: no parameter checksum was recorded (2 optimizer steps)"]
    assert c.compared == {"ranks": 2, "steps": 0, "checksums": 0}
    only_exit = params_run(script, ["a", "b"], ["a", "b"])
    for r in (0, 1):
        for e in only_exit.traces[r]:
            if e["ev"] == "step":
                e.pop("digests")
    c = checks.check_params(only_exit)
    assert c.status == PASS and c.compared["steps"] == 0 and c.compared["checksums"] == 2
    assert c.evidence == [
        "Net: parameters equal on 2 ranks after the wrap and at exit; none of the 2 optimizer steps was checksummed"
    ]


def test_params_with_one_wrapped_rank_compares_nothing(script):
    run = params_run(script, ["a"], ["a"])
    run.traces[1] = [e for e in run.traces[1] if e["ev"] != "ddp"]
    c = checks.check_params(run)
    assert c.status == NA and "only rank 0 constructed DistributedDataParallel" in c.evidence[0]


def test_shards_fail_when_a_finished_rank_read_nothing(script):
    run = shards_run(script, {0: [[0, 1, 2, 3, 4, 5, 6, 7]], 1: [[]]})
    for r in (0, 1):
        run.traces[r].append(end(r))
    c = checks.check_shards(run)
    assert c.status == FAIL
    assert c.evidence[0] == "loader at train.py:3, epoch 0: rank 1 read nothing while rank 0 read 8 indices"
    run.traces[1] = [start(1), end(1)]  # did not iterate the loader at all
    assert checks.check_shards(run).status == FAIL
    run.traces[1] = [start(1)]  # did not finish either: completes tells that story
    c = checks.check_shards(run)
    assert c.status == NA and "rank 1 did not iterate it (did not finish the script)" in c.evidence[0]
    assert c.compared == {"passes": 0, "indices": 0}


def test_shards_count_passes_and_indices(script):
    c = checks.check_shards(shards_run(script, {0: [[0, 2, 4, 6], [1, 3, 5, 7]], 1: [[1, 3, 5, 7], [0, 2, 4, 6]]}))
    assert c.status == PASS and c.compared == {"passes": 2, "indices": 16}
    assert c.evidence == ["loader at train.py:3: 2 epochs, 2 ranks x 4 indices, disjoint, union 8/8"]


def _epochs(script, orders, complete=False, sampler_epoch=0):
    """Two ranks, a pass per epoch; orders[r][e] the indices rank r read in epoch e."""
    run = shards_run(script, orders, complete=complete)
    for r in run.traces:
        for e in run.traces[r]:
            if e["ev"] == "pass" and sampler_epoch is not None:
                e["epoch"] = sampler_epoch
    return run


def test_epoch_order_compares_passes_cut_short(script):
    """A `break` after a few batches and no set_epoch: the first indices repeat in every epoch."""
    run = _epochs(script, {0: [[0, 6, 2, 4, 10], [0, 6, 2, 4]], 1: [[1, 7, 3, 5], [1, 7, 3, 5, 9]]})
    c = checks.check_epoch_order(run)
    assert c.status == FAIL, c.evidence
    assert c.evidence[0].startswith(
        "loader at train.py:3: ranks 0 and 1 read the same first 4 indices in epochs 0 and 1 "
        "(DistributedSampler.epoch was 0 both times"
    )
    assert c.compared == {"passes": 4, "indices": 8}
    fine = _epochs(script, {0: [[0, 6, 2, 4], [4, 2, 0, 6]], 1: [[1, 7, 3, 5], [5, 3, 7, 1]]}, sampler_epoch=None)
    c = checks.check_epoch_order(fine)
    assert c.status == PASS and c.compared == {"passes": 4, "indices": 8}
    assert c.evidence == [
        "loader at train.py:3: order differs in each of 2 epochs on every rank (first indices of passes cut short)"
    ]


def test_epoch_order_counts_each_pass_once(script):
    three = {0: [[0, 6, 2, 4], [4, 2, 0, 6], [6, 4, 2, 0]], 1: [[1, 7, 3, 5], [5, 1, 7, 3], [3, 5, 1, 7]]}
    c = checks.check_epoch_order(_epochs(script, three, complete=True, sampler_epoch=None))
    assert c.status == PASS and c.compared == {"passes": 6, "indices": 16}
    assert c.evidence == ["loader at train.py:3: order differs in each of 3 epochs on every rank"]


def test_epoch_order_too_short_to_judge_is_not_applicable(script):
    run = _epochs(script, {0: [[0, 6], [0, 6]], 1: [[1, 7], [1, 7]]})
    c = checks.check_epoch_order(run)
    assert c.status == NA and "passes too short to compare (fewer than 4 indices)" in c.evidence[0]
    assert not any(c.compared.values())


def test_epoch_order_one_rank_repeating_by_chance_is_not_a_failure(script):
    """A pair fails only when every rank read the same prefix (a sampler that was not re-seeded)."""
    run = _epochs(script, {0: [[0, 6, 2, 4], [0, 6, 2, 4]], 1: [[1, 7, 3, 5], [5, 3, 7, 1]]}, complete=True)
    assert checks.check_epoch_order(run).status == PASS


def test_files_with_one_process_compare_nothing(script, tmp_path):
    traces = {0: [start(0), {"ev": "write", "api": "open", "path": str(tmp_path / "a.txt"), "site": None}]}
    c = checks.check_files(run_of(script, world=1, traces=traces))
    assert c.status == NA and c.evidence == ["one process: no other rank to write the same file (1 written)"]


# ----------------------------------------------------------------------------- probe
def test_probe_errors_fail_the_probe_check_and_explain_the_gaps(script):
    """A DataLoader the probe could not watch: `shards` says why it saw nothing, `probe` fails."""
    error = {"ev": "probe_error", "what": "start pass", "error": "TypeError: unhashable type: 'Loader'"}
    traces = {
        r: [start(r), ddp_ev(script), dict(error), step_ev(script, 1), end(r, steps=1, ddp_forwards={"0": 1})]
        for r in (0, 1)
    }
    report = checks.evaluate(run_of(script, traces=traces))
    assert not report.ok and [c.name for c in report.failed] == ["probe"]
    assert report["probe"].evidence == [
        "ranks 0 and 1: the probe failed at start pass (TypeError: unhashable type: 'Loader'): "
        "DataLoader passes not observed"
    ]
    assert report["shards"].status == NA
    assert report["shards"].evidence == [
        "the probe could not observe DataLoader passes on ranks 0 and 1 (see the probe check)",
        "no training forward ran on two ranks (forward of a module in training mode)",
    ]
    patch = {"ev": "probe_error", "what": "patch DistributedDataParallel", "error": "AttributeError: x"}
    traces = {0: [start(0), patch, end(0)], 1: [start(1), end(1)]}
    c = checks.check_probe(run_of(script, traces=traces))
    assert c.status == FAIL and c.evidence == [
        "rank 0: the probe failed at patch DistributedDataParallel (AttributeError: x): "
        "DistributedDataParallel models not observed"
    ]


def test_probe_counts_lost_trace_lines(script):
    def numbered(r, drop=()):
        evs = [start(r), {"ev": "patched", "installed": ["torch.save", "DataLoader"], "failed": []}, end(r)]
        for i, e in enumerate(evs):
            e["i"] = i
        return [e for i, e in enumerate(evs) if i not in drop]

    ok = checks.check_probe(run_of(script, traces={0: numbered(0), 1: numbered(1)}))
    assert ok.status == PASS and ok.compared == {"ranks": 2, "lines": 6, "patches": 4}
    assert ok.evidence == ["torch.save, DataLoader patched on ranks 0 and 1; 6 trace lines, none lost"]
    gap = run_of(script, traces={0: numbered(0), 1: numbered(1, drop={1})}, unreadable={0: 2})
    c = checks.check_probe(gap)
    assert c.status == FAIL
    assert c.evidence == [
        "rank 0: 2 trace lines lost (2 not readable)",
        "rank 1: 1 trace line lost (1 missing)",
    ]
    assert checks.check_probe(run_of(script, traces={})).status == NA


def test_read_trace_files_counts_lines_that_are_not_json(tmp_path):
    (tmp_path / "rank0.jsonl").write_text('{"ev":"start","i":0}\n{"ev":"wri\n[1]\n{"ev":"end","i":2}\n')
    traces, unreadable = launcher.read_trace_files(str(tmp_path))
    assert [e["ev"] for e in traces[0]] == ["start", "end"] and unreadable == {0: 2}
    assert launcher.read_traces(str(tmp_path)) == traces


def test_probe_numbers_its_lines_and_counts_those_it_could_not_write(tmp_path):
    """The script points the trace's file descriptor at /dev/full for one write: one line is lost."""
    p, trace, _ = run_probe(
        tmp_path,
        """\
        import os
        fd = next(int(n) for n in os.listdir("/proc/self/fd")
                  if os.path.realpath(f"/proc/self/fd/{n}").endswith("rank0.jsonl"))
        saved, full = os.dup(fd), os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, fd)
        open("lost.txt", "w").close()  # its write record cannot be written
        os.dup2(saved, fd)
        open("kept.txt", "w").close()
        """,
    )
    assert p.returncode == 0, p.stderr
    assert [e["i"] for e in trace] == [0, 2, 3] and trace[-1]["lost"] == 1
    run = RunData(script="script.py", world_size=1, traces={0: trace})
    c = checks.check_probe(run)
    assert c.status == FAIL and c.evidence == ["rank 0: 1 trace line lost (1 missing)"]


def test_probe_does_not_take_a_temporary_files_folder_for_a_written_file(tmp_path):
    """tempfile opens the folder with an opener that makes a unique name: no write of the folder itself."""
    p, trace, _ = run_probe(
        tmp_path,
        """\
        import tempfile
        with tempfile.NamedTemporaryFile(dir=".") as f:
            f.write(b"x")
        open("real.txt", "w").close()
        """,
    )
    assert p.returncode == 0, p.stderr
    assert [os.path.basename(e["path"]) for e in trace if e["ev"] == "write"] == ["real.txt"]


def test_probe_and_checks_share_one_library_prefix_helper():
    from ddpfix.verify import probe
    from ddpfix.verify.checks import evidence

    assert evidence.LIB_PREFIXES == probe.library_prefixes()
    assert evidence.is_user_file(str(ROOT / "tests" / "x.py"))
    assert not evidence.is_user_file(str(ROOT / "ddpfix" / "verify" / "probe.py"))
    assert not evidence.is_user_file("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py")
    defining = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "ddpfix" / "verify").rglob("*.py")
        if "sysconfig.get_paths" in p.read_text()
    ]
    assert defining == ["ddpfix/verify/probe.py"]


def test_probe_says_when_torch_came_in_past_its_import_hook(tmp_path):
    """A torch the import hook never saw (here a stand-in put straight into sys.modules) is unpatched."""
    p, trace, _ = run_probe(tmp_path, "import sys, types\nsys.modules['torch'] = types.ModuleType('torch')\n")
    assert p.returncode == 0, p.stderr
    (err,) = [e for e in trace if e["ev"] == "probe_error"]
    assert err["what"] == "patch torch"
    c = checks.check_probe(RunData(script="script.py", world_size=1, traces={0: trace}))
    assert c.status == FAIL and c.evidence == [
        "rank 0: the probe failed at patch torch (torch was imported without the probe's import hook): "
        "DataLoader passes, optimizer steps, collectives, DDP models and torch.save not observed"
    ]


# ----------------------------------------------------------------------------- the GPU script
def _cuda_paths():
    import importlib.util

    spec = importlib.util.spec_from_file_location("cuda_paths", ROOT / "tests" / "gpu" / "cuda_paths.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_cuda_paths_runs_goldens_side_by_side_and_reports_them_in_order(tmp_path, monkeypatch):
    import threading
    import time

    mod = _cuda_paths()
    lock, active, peak = threading.Lock(), [0], [0]

    def fake(script, start):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.2)
        with lock:
            active[0] -= 1
        return [("PASS", f"{script.parent.name} ran")]

    monkeypatch.setattr(mod, "run_golden", fake)
    monkeypatch.setattr(mod, "WORKERS", 4)
    monkeypatch.setattr(mod, "OUT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["cuda_paths.py", "example", "crlf", "latin1", "collectives", "no_torch"])
    assert mod.main() == 0
    assert peak[0] == 4
    lines = (tmp_path / "cuda_paths.txt").read_text().splitlines()
    assert [ln.split()[1] for ln in lines[2:-1]] == ["collectives", "crlf", "example", "latin1", "no_torch"]
    assert lines[-1].startswith("summary: PASS 5, FAIL 0, SKIP 0")


def test_cuda_paths_forces_every_world_size_test():
    forced = _cuda_paths().force_distributed((ROOT / "tests/golden/half_converted/expected.py").read_text())
    assert "WORLD_SIZE > 1" not in forced and "DISTRIBUTED = WORLD_SIZE >= 1" in forced
    assert forced.count("if WORLD_SIZE >= 1:") == 3
