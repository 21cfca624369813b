"""Fast tests of what `ddp` and `shards` make of backward passes and training inputs (synthetic traces):
a model trained outside DDP fails `ddp` with or without an optimizer, and ranks that all fed the same
inputs fail `shards`, wherever the batches came from."""

from __future__ import annotations

import pytest
from test_verify import S, ddp_ev, end, good_run, run_of, start, step_ev

from ddpfix.verify import checks
from ddpfix.verify.checks import FAIL, NA, PASS


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "train.py"
    p.write_text("".join(f"step_{i}()\n" for i in range(1, 13)))
    return p


def plain(script, reached=4):
    return {"id": 0, "module": "Linear", "site": S(script, 4), "ddp_inner": False, "reached": reached, "params": 2}


def backward_ev(script, n=1, reached=(0,)):
    return {"ev": "backward", "n": n, "site": S(script, 7), "plain": list(reached)}


def inputs(script, shas, module="Linear", ddp=False):
    return [
        {"ev": "input", "n": i + 1, "module": module, "ddp": ddp, "sha1": sha, "site": S(script, 6)}
        for i, sha in enumerate(shas)
    ]


def manual_rank(script, r, shas, steps=0, allreduce=False):
    """A rank that trained a plain module by hand (no DDP): backward passes and `p -= lr * p.grad`."""
    ev = [
        start(r),
        {"ev": "train_module", **{k: v for k, v in plain(script).items() if k not in ("reached", "params")}},
    ]
    ev += inputs(script, shas)
    ev.append(backward_ev(script))
    ev += [step_ev(script, n + 1) for n in range(steps)]
    if allreduce:
        ev.append({"ev": "coll", "n": 1, "op": "all_reduce", "group": "world", "grad": True})
    ev.append(end(r, steps=steps, backwards=4, train_forwards=len(shas), plain_trained=[plain(script)]))
    return ev


def test_manual_updates_outside_ddp_fail_ddp_without_any_optimizer_step(script):
    traces = {r: manual_rank(script, r, [f"r{r}b{i}" for i in range(4)]) for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL, c.evidence
    assert c.evidence == [
        "ranks 0 and 1: backward() at train.py:7 reached the parameters of Linear (forward at train.py:4), not "
        "inside a DistributedDataParallel wrapper, and no gradient all-reduce ran (4 backward passes, no optimizer "
        "step): every rank trains its own copy of the model"
    ]
    assert c.compared == {"ranks": 2, "steps": 0, "backwards": 4}


def test_an_optimizer_without_ddp_still_fails_and_names_the_module(script):
    traces = {r: manual_rank(script, r, [f"r{r}b{i}" for i in range(4)], steps=2) for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL
    assert "ran optimizer steps (2, 2) but no DistributedDataParallel was constructed" in c.evidence[0]
    assert "reached the parameters of Linear" in c.evidence[1] and "2 optimizer steps" in c.evidence[1]


def test_gradients_all_reduced_by_hand_are_synchronised(script):
    traces = {r: manual_rank(script, r, [f"r{r}b{i}" for i in range(4)], allreduce=True) for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status != FAIL, c.evidence  # no DDP to credit, but the gradients were averaged


def test_ddp_is_not_applicable_only_when_no_backward_ran(script):
    assert checks.check_ddp(run_of(script)).evidence == ["no backward pass and no optimizer step ran"]
    traces = {r: [start(r), ddp_ev(script), end(r)] for r in (0, 1)}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == NA and "no backward pass ran" in c.evidence[0]


def test_backward_through_ddp_without_an_optimizer_passes(script):
    traces = {
        r: [
            start(r),
            ddp_ev(script),
            backward_ev(script, reached=()),
            {"ev": "coll", "n": 1, "op": "ddp.allreduce", "group": "world"},
            end(r, steps=0, backwards=3, ddp_forwards={"0": 3}, plain_trained=[]),
        ]
        for r in (0, 1)
    }
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == PASS and c.compared == {"ranks": 2, "steps": 0, "backwards": 3}


def test_the_module_of_a_wrapper_called_directly_is_named_as_such(script):
    traces = {r: manual_rank(script, r, ["a", "b"]) for r in (0, 1)}
    for r in (0, 1):
        traces[r][-1]["plain_trained"] = [dict(plain(script), ddp_inner=True)]
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL and "the module of a DistributedDataParallel wrapper, called directly" in c.evidence[0]


def test_the_same_hand_cut_inputs_on_every_rank_fail_shards(script):
    traces = {r: manual_rank(script, r, ["b0", "b1", "b2"]) for r in (0, 1)}
    c = checks.check_shards(run_of(script, traces=traces))
    assert c.status == FAIL
    assert c.evidence == [
        "ranks 0 and 1 fed the same 3 training inputs to Linear's forward (train.py:6) (3/3 forwards digested): "
        "every rank trains on the same batches (no DistributedSampler, or batches not cut by rank)"
    ]
    assert c.compared == {"inputs": 6}


def test_hand_cut_inputs_that_differ_pass_shards(script):
    traces = {r: manual_rank(script, r, [f"r{r}b{i}" for i in range(3)]) for r in (0, 1)}
    c = checks.check_shards(run_of(script, traces=traces))
    assert c.status == PASS
    assert (
        c.evidence[0]
        == "training inputs of Linear's forward (train.py:6): ranks 0 and 1 x 3/3 digested, 6 distinct, none on two ranks"
    )
    assert "no DataLoader was iterated" in c.evidence[1]


def test_constant_inputs_cannot_tell_shards_apart(script):
    traces = {r: manual_rank(script, r, ["same", "same", "same"]) for r in (0, 1)}
    c = checks.check_shards(run_of(script, traces=traces))
    assert c.status == NA and "constant data cannot tell shards apart" in c.evidence[-1]


def test_a_disjoint_loader_with_the_same_inputs_everywhere_still_fails(script):
    """The indices say disjoint, yet every rank fed the same tensors (a dataset that ignores the index)."""
    run = good_run(script)
    for r in (0, 1):
        run.traces[r][-1:-1] = inputs(script, ["x0", "x1", "x2", "x3"], module="Net", ddp=True)
    c = checks.check_shards(run)
    assert c.status == FAIL and "fed the same 4 training inputs to Net's forward" in c.evidence[0]
    run = good_run(script)
    for r in (0, 1):
        run.traces[r][-1:-1] = inputs(script, [f"r{r}x{i}" for i in range(4)], module="Net", ddp=True)
    c = checks.check_shards(run)
    assert c.status == PASS and c.compared["inputs"] == 8 and c.compared["indices"] == 16


def test_shards_not_applicable_without_a_training_forward(script):
    c = checks.check_shards(run_of(script))
    assert c.status == NA
    assert c.evidence == [
        "no DataLoader was iterated",
        "no training forward ran on two ranks (forward of a module in training mode)",
    ]


def test_a_bypassed_wrapper_is_named_once(script):
    """Forward through `.module`: the wrapper that never ran forward is the evidence; the backward that
    reached its module says nothing more."""
    traces = {r: manual_rank(script, r, ["a", "b"], steps=2) for r in (0, 1)}
    for r in (0, 1):
        traces[r].insert(1, ddp_ev(script))
        traces[r][-1]["plain_trained"] = [dict(plain(script), ddp_inner=True)]
        traces[r][-1]["ddp_forwards"] = {"0": 0}
    c = checks.check_ddp(run_of(script, traces=traces))
    assert c.status == FAIL and len(c.evidence) == 1
    assert "never ran forward on ranks 0 and 1, which took 2 optimizer steps" in c.evidence[0]


def test_inputs_that_differ_prove_no_pass_when_the_loader_went_unseen(script):
    blind = {"ev": "probe_error", "what": "start pass", "error": "TypeError: unhashable type: 'Loader'"}
    traces = {r: manual_rank(script, r, [f"r{r}b{i}" for i in range(3)]) for r in (0, 1)}
    for r in (0, 1):
        traces[r].insert(1, dict(blind))
    c = checks.check_shards(run_of(script, traces=traces))
    assert c.status == NA and "could not observe DataLoader passes" in " ".join(c.evidence)
    for r in (0, 1):  # the same inputs everywhere fail all the same
        traces[r] = [e for e in traces[r] if e["ev"] != "input"] + inputs(script, ["s0", "s1"])
    assert checks.check_shards(run_of(script, traces=traces)).status == FAIL
