"""Real torchrun runs of ddpfix verify over hand-written scripts in tests/verify_cases/.

Each broken script breaks one invariant; the verifier must fail exactly the matching check(s) with
evidence that names it, and pass the rest. About 10-20 s per run on two CPU cores.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest
from teardown import CrashAtExitRerun, crashed_only_at_exit, verify_with_reruns

from ddpfix.verify import launcher, processes, verify_script

pytestmark = pytest.mark.slow

CASES = Path(__file__).resolve().parent / "verify_cases"
CONTRACT = (
    Path(__file__).resolve().parent / "golden" / "example_unsafe" / "expected.py"
)  # the contract's train_after.py
RUN_TIMEOUT = 240  # generous: a loaded two-core machine runs these several times slower
HANG_TIMEOUT = 30


def line_of(name: str, text: str) -> int:
    for i, line in enumerate((CASES / name).read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(f"{text!r} not in {name}")


def describe(report) -> str:
    lines = [f"{c.status:5} {c.name}: {' / '.join(c.evidence)}" for c in report.checks]
    return "\n".join(lines) + "\n" + report.output[-3000:]


def failing(report) -> set:
    return {c.name for c in report.failed}


def run_case(name, tmp_path, **kw):
    kw.setdefault("timeout", RUN_TIMEOUT)
    return verify_with_reruns(lambda cwd: verify_script(CASES / name, cwd=cwd, **kw), tmp_path / "run", name).last


def test_correct_script_passes_through_the_cli(tmp_path):
    """The contract example, 3 ranks (DistributedSampler pads 512 to 513), --single, JSON output."""
    cmd = [
        sys.executable,
        "-m",
        "ddpfix.verify",
        str(CONTRACT),
        "--nproc",
        "3",
        "--single",
        "--timeout",
        str(RUN_TIMEOUT),
        "--format",
        "json",
        "--",
        "--epochs",
        "2",
    ]
    kept = []  # every report, the one rerun over included
    for cwd in (tmp_path / "run", tmp_path / "run-again"):  # the second only after a crash at exit
        cwd.mkdir()
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=2 * RUN_TIMEOUT + 60)
        data = json.loads(p.stdout)
        kept.append(data)
        completes = next(c for c in data["checks"] if c["name"] == "completes")
        if not crashed_only_at_exit(completes["data"].get("ranks", {})):
            break
        warnings.warn(
            f"contract example through the CLI: a rank crashed while exiting after finishing the script; "
            f"running once more ({completes['evidence'][0]})",
            CrashAtExitRerun,
            stacklevel=1,
        )
    status = {c["name"]: c["status"] for c in data["checks"]}
    assert p.returncode == 0, (data["checks"], data["output"][-4000:], p.stderr[-2000:], kept[:-1])
    assert set(status.values()) == {"pass"}
    shards = next(c for c in data["checks"] if c["name"] == "shards")
    assert (
        "3 ranks x 171 indices, disjoint, 1 repeated by DistributedSampler padding, union 512/512"
        in shards["evidence"][0]
    )
    assert data["meta"]["backend_used"] == "gloo" and data["meta"]["world_size"] == 3
    assert [r["rank"] for r in data["ranks"]] == [0, 1, 2]
    assert sorted(os.listdir(cwd)) == ["checkpoint.pt", "train.log"]  # nothing of ours in the cwd


def test_no_sampler_overlapping_shards(tmp_path):
    report = run_case("no_sampler.py", tmp_path)
    assert failing(report) == {"shards"}, describe(report)
    ev = report["shards"].evidence[0]
    assert ev.startswith("loader at no_sampler.py:18, epoch 0: indices {0, 1, 2} and 61 more on ranks 0 and 1")
    assert "the ranks read 128 samples but only 64 distinct ones" in ev


def test_sampler_without_set_epoch(tmp_path):
    report = run_case("no_set_epoch.py", tmp_path, backend="gloo")
    assert failing(report) == {"epoch_order"}, describe(report)
    assert (
        "read the same order in epochs 0 and 1 (DistributedSampler.epoch was 0 both times"
        in report["epoch_order"].evidence[0]
    )
    assert report.meta["backend_option"] == "gloo" and report.meta["backend_used"] == "gloo"


def test_data_split_apart_by_rank(tmp_path):
    """An unseeded random_split: the positions the sampler gives each rank are disjoint, the samples
    behind them are not; with one generator seed the same script passes."""
    report = run_case("split_per_rank.py", tmp_path)
    assert failing(report) == {"shards"}, describe(report)
    assert report["shards"].evidence[0] == (
        "loader at split_per_rank.py:23: its dataset is a Subset of different samples on ranks 0 and 1 "
        "(a random_split with no shared seed?): the ranks' shards overlap in the underlying dataset"
    )
    seeded = tmp_path / "seeded" / "split_per_rank.py"
    seeded.parent.mkdir()
    text = (CASES / "split_per_rank.py").read_text()
    seeded.write_text(text.replace("[48, 16])", "[48, 16], generator=torch.Generator().manual_seed(0))"))
    run = verify_with_reruns(lambda cwd: verify_script(seeded, cwd=cwd, timeout=RUN_TIMEOUT), tmp_path / "r2", "seeded")
    assert failing(run.last) == set(), describe(run.last)


def test_every_rank_saves(tmp_path):
    report = run_case("all_ranks_save.py", tmp_path)
    assert failing(report) == {"files"}, describe(report)
    line = line_of("all_ranks_save.py", "torch.save(")
    assert report["files"].evidence == [
        f"checkpoint.pt written by ranks [0, 1] (torch.save at all_ranks_save.py:{line})"
    ]


def test_every_rank_deletes_the_run_folder(tmp_path):
    """A deletion is a write: a folder every rank empties has two writers (the race in which one rank
    deletes what another has just written there)."""
    report = run_case("all_ranks_remove.py", tmp_path)
    assert failing(report) == {"files"}, describe(report)
    rmtree, save, remove = (line_of("all_ranks_remove.py", s) for s in ("shutil.rmtree(", "torch.save(", "os.remove("))
    assert report["files"].evidence == [
        f"runs written by ranks [0, 1] (shutil.rmtree at all_ranks_remove.py:{rmtree})",
        f"runs/checkpoint.pt written by ranks [0, 1] (torch.save at all_ranks_remove.py:{save} on rank 0; "
        f"os.remove at all_ranks_remove.py:{remove} on rank 1)",
    ]


def test_a_pickled_wrapper_completes_as_it_would_without_the_probe(tmp_path):
    """The probe's comm hook pickles with the DDP wrapper the script saves whole (it raised "Can't pickle
    local object" under verify only)."""
    report = run_case("pickles_wrapper.py", tmp_path)
    assert report["completes"].status == "pass", describe(report)
    assert report["collectives"].status == "pass", describe(report)


def test_barrier_on_rank0_hangs_and_names_the_lines(tmp_path):
    t0 = time.monotonic()
    report = run_case("barrier_rank0.py", tmp_path, timeout=HANG_TIMEOUT)
    wall = time.monotonic() - t0
    assert wall < HANG_TIMEOUT + 10, wall  # never outlives the limit
    assert report.meta["timed_out"] and report.meta["duration"] < HANG_TIMEOUT + 6
    assert {"completes", "collectives"} <= failing(report), describe(report)
    barrier = line_of("barrier_rank0.py", "dist.barrier()")
    backward = line_of("barrier_rank0.py", "loss.backward()")
    ev = report["completes"].evidence
    assert f"rank 0 waits in `dist.barrier()` at barrier_rank0.py:{barrier} (in barrier())" in ev, describe(report)
    assert f"rank 1 waits in `loss.backward()` at barrier_rank0.py:{backward} (in backward())" in ev, describe(report)
    assert (
        f"rank 0 issued barrier at `dist.barrier()` at barrier_rank0.py:{barrier}" in report["collectives"].evidence[0]
    )
    # every rank process is gone
    pids = [r["pid"] for r in report.ranks if r["pid"]]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(processes.alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(processes.alive(p) for p in pids)


def test_step_skipped_on_one_rank(tmp_path):
    report = run_case("skip_step.py", tmp_path)
    assert failing(report) == {"params"}, describe(report)
    step = line_of("skip_step.py", "optimizer.step()")
    ev = report["params"].evidence
    assert ev[0].startswith(
        f"parameters of Linear first differ after optimizer step 3 of 8 "
        f"(`optimizer.step()` at skip_step.py:{step}): rank 0 sum"
    )
    assert ev[1] == "optimizer steps differ: rank 0 took 8, rank 1 took 7"


def test_forward_through_module_diverges(tmp_path):
    report = run_case("module_forward.py", tmp_path)
    assert failing(report) == {"params", "ddp"}, describe(report)
    assert report["params"].evidence[0].startswith("parameters of Linear first differ after optimizer step 1 of 8")
    assert "never ran forward on ranks 0 and 1" in report["ddp"].evidence[0]
    assert report["collectives"].evidence[0] == "2 ranks issued the same 1 collective: 1 barrier"


def test_a_model_wrapped_in_part_drifts_apart_outside_the_wrapper(tmp_path):
    """`model.features = DDP(model.features)` while the optimizer steps the whole model: the features stay
    equal, the classifier does not. The DDP-wrapped parameters alone would pass `params`."""
    report = run_case("part_wrapped.py", tmp_path)
    assert failing(report) == {"params"}, describe(report)
    step = line_of("part_wrapped.py", "optimizer.step()")
    assert (
        report["params"]
        .evidence[0]
        .startswith(
            "parameters stepped by SGD outside every DistributedDataParallel wrapper (2 tensors, 9 values) first "
            f"differ after optimizer step 1 of 8 (`optimizer.step()` at part_wrapped.py:{step}): rank 0 sum"
        )
    ), describe(report)


def test_forward_called_as_a_method_of_the_wrapper_is_synchronised(tmp_path):
    """`model.forward(x)` on the DDP wrapper: DDP's forward prepares the all-reduce, no hook runs."""
    report = run_case("direct_forward.py", tmp_path)
    assert report.ok, describe(report)
    assert {c.name: c.status for c in report.checks if c.name in ("ddp", "shards", "collectives")} == {
        "ddp": "pass",
        "shards": "pass",
        "collectives": "pass",
    }, describe(report)
    assert "8 ddp.allreduce" in report["collectives"].evidence[0], describe(report)
    assert "Net's forward" in report["shards"].evidence[0] and "8/8 digested" in report["shards"].evidence[0]


def test_script_options_that_abbreviate_torchruns_own_reach_the_script(tmp_path):
    """`--s 1` is a prefix of torchrun's `--standalone`, `--start-method`, ...: argparse would refuse it as
    ambiguous before the script ever ran, were it not after `--`."""
    report = run_case("direct_forward.py", tmp_path, args=["--s", "1", "--no-ddp"])
    assert failing(report) == {"ddp"}, describe(report)  # `--no-ddp` reached the script, behind `--s 1`
    assert report["completes"].status == "pass", describe(report)


def test_forward_called_as_a_method_without_the_wrapper_fails_ddp(tmp_path):
    report = run_case("direct_forward.py", tmp_path, args=["--no-ddp"])
    assert failing(report) == {"ddp"}, describe(report)
    assert "reached the parameters of Net (forward at direct_forward.py:" in report["ddp"].evidence[1]


def test_crash_at_exit_is_named_as_one(tmp_path, monkeypatch):
    """Rank 1 aborts in exit(), after Python's shutdown: no Python frame and no faulthandler dump to go by,
    only torchrun's failure summary. The report must say the script finished and the crash came after."""
    monkeypatch.delenv("DDPFIX_PROBE_SKIP_TEARDOWN", raising=False)  # the real exit, as verify runs it
    report = verify_script(CASES / "abort_at_exit.py", cwd=tmp_path, timeout=RUN_TIMEOUT)
    assert failing(report) == {"completes"}, describe(report)
    ev = report["completes"].evidence
    # the cause in brackets is whoever reported the abort first: torchrun's summary (SIGABRT), or, when a
    # thread's destructor in torch's own teardown terminated first, the interpreter's dump and the C++ runtime
    cause = re.fullmatch(
        r"rank 1 finished the script, then its process crashed while exiting \((.+)\): a crash in "
        r"shutdown code \(the interpreter's or a library's\), after the script's last line",
        ev[0],
    )
    assert cause, describe(report)
    assert cause.group(1) == "SIGABRT" or cause.group(1).startswith("Fatal Python error: Aborted"), describe(report)
    states = report["completes"].data["ranks"]
    assert states[1] == "exit_crash" and states[0] in ("finished", "exit_stopped"), states
    assert crashed_only_at_exit(states)
    assert [r["state"] for r in report.ranks][1] == "exit_crash"


def test_two_nodes_expose_local_rank_saves(tmp_path):
    report = run_case("local_rank_save.py", tmp_path, nnodes=2)
    assert failing(report) == {"files"}, describe(report)
    assert "(each is LOCAL_RANK 0 on its node: guard on the global rank, not LOCAL_RANK)" in report["files"].evidence[0]
    assert [(r["rank"], r["local_rank"], r["group_rank"]) for r in report.ranks] == [(0, 0, 0), (1, 0, 1)]
    assert len(report.meta["commands"]) == 2


def test_probe_in_a_plain_process_records_loaders_steps_and_files(tmp_path):
    """No torchrun, no DDP: workers, a batch_sampler and the default sampler all report their indices."""
    script = tmp_path / "plain.py"
    script.write_text(
        textwrap.dedent("""\
        import logging
        import torch
        from torch.utils.data import BatchSampler, DataLoader, SequentialSampler, TensorDataset

        def main():
            logging.basicConfig(filename="plain.log", level=logging.INFO)
            data = TensorDataset(torch.arange(12.0).unsqueeze(1), torch.zeros(12, 1))
            model = torch.nn.Linear(1, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            workers = DataLoader(data, batch_size=4, num_workers=2)
            batches = DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), 5, drop_last=True))
            for _ in range(2):
                for x, y in workers:
                    opt.zero_grad()
                    torch.nn.functional.mse_loss(model(x), y).backward()
                    opt.step()
            for x, y in batches:
                pass
            for epoch in range(2):  # rebuilt every epoch: still one loader, two epochs
                rebuilt = DataLoader(data, batch_size=6, shuffle=True)
                for x, y in rebuilt:
                    pass
            torch.save(model.state_dict(), "plain.pt")

        if __name__ == "__main__":
            main()
        """)
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = launcher._probe_env({k: v for k, v in os.environ.items() if k != "RANK"}, str(run_dir), "auto", None)
    p = subprocess.run(
        [sys.executable, launcher.PROBE_FILE, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert p.returncode == 0, p.stderr
    trace = launcher.read_traces(str(run_dir))[0]
    passes = [e for e in trace if e["ev"] == "pass"]
    assert [(e["n"], e["indices"], e["complete"]) for e in passes[:3]] == [
        (0, list(range(12)), True),
        (1, list(range(12)), True),
        (0, list(range(10)), True),
    ]
    assert [e["n"] for e in passes[3:]] == [0, 1] and passes[3]["loader"] == passes[4]["loader"]
    assert sorted(passes[3]["indices"]) == list(range(12)) and passes[3]["indices"] != passes[4]["indices"]
    assert len({e["loader"] for e in passes}) == 3
    loaders = [e for e in trace if e["ev"] == "loader"]
    assert (
        len(loaders) == 3
        and loaders[0]["num_workers"] == 2
        and loaders[1]["batch_size"] == 5
        and loaders[1]["drop_last"]
    )
    steps = [e for e in trace if e["ev"] == "step"]
    assert len(steps) == 6 and all("digests" not in s for s in steps)
    writes = {Path(e["path"]).name: e["api"] for e in trace if e["ev"] == "write"}
    assert writes == {"plain.log": "logging.FileHandler", "plain.pt": "torch.save"}
    assert not [e for e in trace if e["ev"] in ("ddp", "coll", "probe_error")]
    assert trace[-1]["ev"] == "end" and trace[-1]["status"] == "ok"


def test_private_names_the_probe_relies_on():
    """Pinned per torch version: the probe patches or reads these."""
    import runpy

    import torch
    from torch.nn.parallel import DistributedDataParallel
    from torch.optim.optimizer import register_optimizer_step_post_hook  # noqa: F401
    from torch.utils.data import RandomSampler
    from torch.utils.data import dataloader as dl

    for name in ("__init__", "_reset", "_next_index"):
        assert callable(getattr(dl._BaseDataLoaderIter, name))
    assert hasattr(dl._DatasetKind, "Iterable")
    assert hasattr(RandomSampler(range(3)), "_num_samples")
    assert callable(DistributedDataParallel._register_builtin_comm_hook)
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook  # noqa: F401

    assert hasattr(runpy, "_ModifiedArgv0")
    assert torch.distributed.is_available()


# ----------------------------------------------------------------------------- mutations of a golden
BASE = Path(__file__).resolve().parent / "golden" / "example"
SET_EPOCH = ("            train_sampler.set_epoch(epoch)\n", "            pass  # set_epoch removed\n")
EARLY_BREAK = (
    "            optimizer.step()\n",
    "            optimizer.step()\n            break  # every epoch stops early\n",
)
UNHASHABLE = (
    "class Net(nn.Module):\n",
    "class Loader(DataLoader):\n    def __eq__(self, other):  # equality without a hash: unhashable\n"
    "        return self is other\n\n\nclass Net(nn.Module):\n",
)
# name -> (text replacements, checks whose status moves away from the golden's declared one)
MUTATIONS = {
    "no_set_epoch": ([SET_EPOCH], {"epoch_order": "fail"}),
    "every_rank_saves": (
        [("        if RANK == 0:\n            logger.info", "        if True:\n            logger.info")],
        {"files": "fail"},
    ),
    "no_wrap": (
        [
            (
                '        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)\n',
                "        pass\n",
            )
        ],
        {"ddp": "fail", "params": "n/a", "collectives": "n/a"},
    ),
    "early_break_no_set_epoch": ([SET_EPOCH, EARLY_BREAK], {"epoch_order": "fail"}),
    "early_break": ([EARLY_BREAK], {}),
    "no_sampler": ([("sampler=train_sampler)", "sampler=None)")], {"shards": "fail", "epoch_order": "n/a"}),
    "unwatchable_loader": (
        [UNHASHABLE, ("DataLoader(train_dataset,", "Loader(train_dataset,")],
        {"probe": "fail", "shards": "n/a", "epoch_order": "n/a"},
    ),
}


def mutate(text: str, replacements) -> str:
    for old, new in replacements:
        assert text.count(old) == 1, f"the mutation's anchor {old!r} is not once in {BASE.name}/expected.py"
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_a_mutated_golden_fails_the_matching_check(mutation, tmp_path):
    """Each mutation of a correct golden breaks one invariant: exactly the matching checks move."""
    replacements, moved = MUTATIONS[mutation]
    declared = json.loads((BASE / "options.json").read_text())["checks"]
    script = tmp_path / "train.py"
    script.write_text(mutate((BASE / "expected.py").read_text(), replacements))
    args = (
        [line for line in (BASE / "args.txt").read_text().splitlines() if line] if (BASE / "args.txt").exists() else []
    )
    runs = verify_with_reruns(
        lambda cwd: verify_script(script, args, cwd=cwd, timeout=RUN_TIMEOUT), tmp_path / "run", mutation
    )
    report = runs.last
    assert report.statuses == {**declared, **moved}, describe(report)
    if mutation == "early_break_no_set_epoch":
        assert "read the same first 32 indices in epochs 0 and 1" in report["epoch_order"].evidence[0]
    if mutation == "early_break":
        assert report["epoch_order"].evidence[0].endswith("(first indices of passes cut short)")
        assert report["epoch_order"].compared == {"passes": 4, "indices": 64}
    if mutation == "unwatchable_loader":
        assert "the probe failed at start pass (TypeError: " in report["probe"].evidence[0]
