"""The DDP contract (ddpfix/contract/): every invariant, broken on purpose by a test rule in a correct DDP
script, makes the rewrite incomplete, and `check` on that output reports the same finding."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from guard_rules import registered

from ddpfix import check_source, fix_source
from ddpfix.contract import INVARIANTS, JUDGES, breaches
from ddpfix.contract.lines import to_input
from ddpfix.diagnostic import SAFE, Diagnostic
from ddpfix.rule import Context, Order, Rule
from ddpfix.syntax import code_of, walk
from ddpfix.transforms import BY_CODE

CORRECT = textwrap.dedent(
    """\
    import os

    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, TensorDataset
    from torch.utils.data.distributed import DistributedSampler

    RANK = int(os.environ.get("RANK", 0))
    LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
    WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
    DISTRIBUTED = WORLD_SIZE > 1


    class Net(nn.Module):
        def __init__(self, n_classes=2):
            super().__init__()
            self.n_classes = n_classes
            self.fc = nn.Linear(8, n_classes)

        def forward(self, x):
            return self.fc(x)


    def main():
        if DISTRIBUTED:
            if torch.cuda.is_available():
                torch.cuda.set_device(LOCAL_RANK)
            dist.init_process_group("gloo")
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
        sampler = DistributedSampler(data) if DISTRIBUTED else None
        loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)
        model = Net()
        raw_model = model
        if DISTRIBUTED:
            model = DDP(model)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            if sampler is not None:
                sampler.set_epoch(epoch)
            correct = torch.zeros(2)
            for x, y in loader:
                optimizer.zero_grad()
                out = model(x)
                loss = nn.functional.cross_entropy(out, y)
                loss.backward()
                optimizer.step()
                correct[0] += (out.argmax(1) == y).sum()
                correct[1] += y.numel()
            if DISTRIBUTED:
                dist.all_reduce(correct)
            if RANK == 0:
                print(f"epoch {epoch} acc {correct[0] / correct[1]:.3f} of {raw_model.n_classes} classes")
        if RANK == 0:
            torch.save(raw_model.state_dict(), "model.pt")
        if DISTRIBUTED:
            dist.destroy_process_group()


    if __name__ == "__main__":
        main()
    """
)


class _Breaker(Rule):
    """Rewrites the first statement whose code holds `old` (`old` replaced by `new`), or puts the
    statement `before` above it: a deliberately wrong edit, for the contract to catch."""

    fix = SAFE
    docs = "## What\nA rule that breaks the contract, for the contract's tests.\n"
    old = ""
    new = ""
    before = ""

    def run(self, ctx: Context) -> None:
        stmts = [n for n in walk(ctx.facts.module) if isinstance(n, cst.SimpleStatementLine)]
        hit = next((s for s in stmts if self.old in code_of(s)), None)
        if hit is None:
            return
        if self.before:
            if self.before not in ctx.facts.module.code and ctx.report(hit):
                ctx.plan.insert_before(hit, ctx.plan.statements(self.before), order=Order.OPTIMIZER)
            return
        if ctx.report(hit):
            text = code_of(hit).strip().replace(self.old, self.new)
            ctx.plan.replace(
                hit,
                lambda node, text=text: cst.parse_statement(text + "\n").with_changes(leading_lines=node.leading_lines),
            )


def _breaker(number: int, old: str, new: str = "", before: str = "") -> Rule:
    cls = type(
        f"Breaks{number}",
        (_Breaker,),
        {"code": f"DDP9{number:02d}", "name": f"test-breaks-{number}", "message": "breaks the contract"},
    )
    cls.old, cls.new, cls.before = old, new, before
    return cls()


# invariant -> (a test rule that breaks it, the rule whose finding on the output says so)
BREAKERS = {
    1: (_breaker(1, "model = DDP(model)", "model = model"), "DDP301"),
    2: (_breaker(2, "raw_model.n_classes", "model.n_classes"), "DDP308"),
    3: (_breaker(3, ", sampler=sampler)", ")"), "DDP202"),
    4: (_breaker(4, "raw_model = model", before="optimizer = torch.optim.SGD(model.parameters(), lr=0.01)"), "DDP305"),
    5: (_breaker(5, "torch.cuda.set_device(LOCAL_RANK)", "pass"), "DDP006"),
    7: (_breaker(7, "torch.manual_seed(0)", "pass"), "DDP210"),
    8: (_breaker(8, "dist.all_reduce(correct)", "pass"), "DDP409"),
}


class _Unguard(_Breaker):
    """Takes `torch.save(...)` out of its `if RANK == 0:` (the guard becomes `if True:`)."""

    code, name, message = "DDP906", "test-breaks-6", "breaks the contract"

    def run(self, ctx: Context) -> None:
        for node in ctx.facts.index.ifs:
            if code_of(node.test) == "RANK == 0" and "torch.save" in code_of(node.body) and ctx.report(node.test):
                ctx.plan.replace(node.test, lambda n: cst.parse_expression("True"))


BREAKERS[6] = (_Unguard(), "DDP401")


def test_the_correct_script_keeps_the_contract():
    assert check_source(CORRECT) == []
    result = fix_source(CORRECT)
    assert not result.changed and result.incomplete == []


def test_every_invariant_has_a_breaker_and_a_judge():
    assert sorted(BREAKERS) == [inv.number for inv in INVARIANTS]
    for number, (_, judge) in BREAKERS.items():
        assert JUDGES[judge] == number
    assert set(JUDGES) <= set(BY_CODE), "a judge that is not a rule"


@pytest.mark.parametrize("number", sorted(BREAKERS))
def test_an_output_that_breaks_an_invariant_is_incomplete_and_check_says_so(number):
    rule, judge = BREAKERS[number]
    with registered(rule):
        result = fix_source(CORRECT, select=[rule.code])
    assert result.changed, f"the test rule for invariant {number} made no edit"
    assert [d.code for d in result.diagnostics if d.applied] == [rule.code]
    found = [b for b in result.incomplete if b.code == judge]
    assert found and all(b.invariant.number == number for b in found), [b.format() for b in result.incomplete]
    left = check_source(result.code)
    assert (judge, found[0].output_line) in {(d.code, d.line) for d in left}
    # the input line named is the output's line where the rewrite kept it, else where the rewrite put it
    old, new = CORRECT.splitlines(), result.code.splitlines()
    kept = old[found[0].line - 1] == new[found[0].output_line - 1]
    assert kept or new[found[0].output_line - 1] not in old, (found[0].line, found[0].output_line)


def test_an_incomplete_rewrite_is_stable():
    """A second apply over an incomplete output changes nothing and says the same."""
    rule, judge = BREAKERS[7]  # (a metric left unreduced, invariant 8, a second apply reduces: DDP409 fixes)
    with registered(rule):
        first = fix_source(CORRECT, select=[rule.code])
    assert first.incomplete
    again = fix_source(first.code)
    assert again.code == first.code
    assert [(b.code, b.output_line) for b in again.incomplete] == [(b.code, b.output_line) for b in first.incomplete]


def test_a_finding_the_contract_does_not_judge_is_not_incomplete():
    diags = [Diagnostic("DDP306", "BatchNorm", 3, 1, 3, 2), Diagnostic("DDP008", "framework", 1, 1, 1, 2, info=True)]
    assert breaches(diags, "a\nb\nc\n", "a\nb\nc\n") == []


def test_lines_of_the_output_map_to_the_input():
    before = "a\nb\nc\nd\n"
    after = "a\nnew1\nnew2\nb\nc\nchanged\n"
    where = to_input(before, after)
    assert [where(n) for n in range(1, 7)] == [1, 2, 2, 2, 3, 4]


def test_a_line_moved_under_a_rank_guard_maps_to_its_own_input_line():
    before = "for i in x:\n    if i % 3 == 0:\n        print(i)\n    print(total)\ndone()\n"
    after = (
        "for i in x:\n    if i % 3 == 0:\n        if RANK == 0:\n            print(i)\n"
        "    if RANK == 0:\n        print(total)\ndone()\n"
    )
    where = to_input(before, after)
    # each print keeps its own line; each guard maps to the line it was put before
    assert [where(n) for n in range(1, 8)] == [1, 2, 3, 3, 4, 4, 5]


def test_the_cli_prints_incomplete_lines_and_apply_exits_1(tmp_path):
    script = tmp_path / "train.py"
    broken = CORRECT.replace("    torch.manual_seed(0)\n", "    pass\n")  # each rank draws its own task
    script.write_text(broken.replace("torch.cuda.set_device(LOCAL_RANK)", "pass"))  # and one thing to fix
    run = subprocess.run(
        [sys.executable, "-m", "ddpfix", "apply", str(script)], capture_output=True, text=True, check=False
    )
    assert run.returncode == 1, run.stderr
    given = broken.replace("torch.cuda.set_device(LOCAL_RANK)", "pass")
    line = next(i + 1 for i, t in enumerate(given.splitlines()) if "data = " in t and "randn" in t)
    assert f"{script}:{line}: incomplete: task differs by rank (invariant 7): DDP210" in run.stderr
    assert run.stderr.splitlines()[-1].startswith("next: change the lines marked incomplete, then ddpfix verify")
    run = subprocess.run(
        [sys.executable, "-m", "ddpfix", "check", "--format", "json", str(script)],
        capture_output=True,
        text=True,
        check=False,
    )
    records = json.loads(run.stdout)
    assert [(r["code"], r["contract"]["invariant"]) for r in records] == [("DDP210", 7)]


def test_a_metric_the_ranks_never_reduce_is_reduced_before_rank_0_shows_it():
    """A DDP script whose process group can reduce on the CPU (gloo here) that prints a total summed
    over its shard: apply reduces it before the rank-0 guard, and the output keeps the contract."""
    broken = CORRECT.replace("            dist.all_reduce(correct)\n", "            pass\n")
    assert ("DDP409", 8) in [(b.code, b.invariant.number) for b in fix_source(broken, select=["DDP006"]).incomplete]
    result = fix_source(broken)
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert [d.code for d in result.diagnostics if d.applied] == ["DDP409"]
    assert "avg_correct = reduce_over_ranks(correct, average=True)\n        if RANK == 0:" in result.code
    nccl = broken.replace('init_process_group("gloo")', 'init_process_group("nccl")')  # NCCL alone: no CPU
    assert [(b.code, b.invariant.number) for b in fix_source(nccl, ignore=["DDP002"]).incomplete] == [("DDP409", 8)]


def test_a_total_over_samples_cut_by_rank_is_a_metric_to_reduce():
    """An epoch total summed over hand-cut samples (DDP209 shards them) is rank 0's shard alone once
    converted, where it was silently halved: the conversion reduces it over the ranks too."""
    golden = Path(__file__).parent / "golden" / "sample_list" / "input.py"
    src = golden.read_text()
    src = src.replace("    for epoch in range(3):\n", "    for epoch in range(3):\n        total = 0.0\n")
    src = src.replace(
        "            optimizer.step()\n", "            optimizer.step()\n            total += loss.item()\n"
    )
    src = src.replace("last loss {loss.item():.3f}", "loss {total:.3f}")
    result = fix_source(src, path=str(golden))
    assert "trigrams[RANK::WORLD_SIZE]" in result.code
    assert result.incomplete == [], [b.format() for b in result.incomplete]  # reduced in the same apply
    assert "global_total = reduce_over_ranks(total)" in result.code
    assert ("DDP409", True) in [(d.code, d.applied) for d in result.diagnostics]


def test_a_metric_is_reduced_only_where_its_loader_is_sharded_in_the_same_apply():
    """A script with its own launch path (golden local_rank_option): the total is reduced when DDP201
    shards its loader and DDP002 gives the group a CPU backend in the same apply; with DDP409 and DDP406
    selected neither happens, and reducing would sum every rank's copy of the whole dataset on an NCCL
    group that cannot reduce a CPU tensor: no reduction."""
    src = (Path(__file__).parent / "golden" / "local_rank_option" / "input.py").read_text()
    assert "avg_total = reduce_over_ranks(total, average=True)" in fix_source(src).code
    alone = fix_source(src, select=["DDP409", "DDP406"])  # the prints guarded, the loader not sharded
    assert alone.changed and "reduce_over_ranks" not in alone.code
    assert ("DDP201", 3) in [(b.code, b.invariant.number) for b in alone.incomplete]  # every rank: all the data
