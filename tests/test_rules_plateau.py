"""DDP313: ReduceLROnPlateau stepped with a metric of this rank's shard only."""

from __future__ import annotations

import textwrap

import pytest
from invariants import converted

from ddpfix import check_source, fix_source

HEAD = """
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
for epoch in range(2):
    total, losses, steps = 0.0, [], 0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += loss.item()
        losses.append(loss.item())
        steps += 1
"""

DISTRIBUTED_HEAD = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group({backend})
torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
for epoch in range(2):
    val_loss = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        val_loss += loss.item()
    mean_loss = val_loss / len(loader)
    scheduler.step(mean_loss)
"""


def script(step: str) -> str:
    return HEAD.lstrip() + textwrap.indent(textwrap.dedent(step).strip() + "\n", "    ")


def found(src: str, **options) -> list:
    return [d for d in check_source(src, **options) if d.code == "DDP313"]


@pytest.mark.parametrize(
    ("step", "reduced"),
    [
        ("scheduler.step(np.mean(losses))", "avg_losses = reduce_over_ranks(np.mean(losses), average=True)"),
        (
            "scheduler.step(sum(losses) / len(losses))",
            "avg_losses = reduce_over_ranks(sum(losses) / len(losses), average=True)",
        ),
        ("scheduler.step(total / len(loader))", "avg_total = reduce_over_ranks(total, average=True)"),
        ("scheduler.step(total / steps)", "avg_total = reduce_over_ranks(total, average=True)"),
        ("scheduler.step(metrics=total / len(ds))", "global_total = reduce_over_ranks(total)"),
        (
            # a value derived from a total is derived from the reduced total (every later read of it is the run's)
            "epoch_loss = total / steps\nscheduler.step(epoch_loss)",
            "avg_total = reduce_over_ranks(total, average=True)\n    epoch_loss = avg_total / steps",
        ),
    ],
)
def test_a_metric_of_this_ranks_shard_is_reduced_before_the_step(step, reduced):
    src = script(step)
    (d,) = found(src)
    assert d.message.startswith("after the conversion, ReduceLROnPlateau would be stepped with this rank's")
    out = converted(src)
    assert f"    {reduced}\n" in out
    assert out.count("def reduce_over_ranks(") == 1


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ("scheduler.step(max(losses))", "the metric is not a mean or a total that can be reduced as it is"),
        ("scheduler.step(losses[-1])", "the metric is not a mean or a total that can be reduced as it is"),
        ("scheduler.step(total / len(loader) + np.mean(losses))", "the metric is not a mean or a total"),
        ("if total > 1:\n    scheduler.step(total)", "not every rank reaches the step alike"),
    ],
)
def test_a_metric_with_no_safe_reduction_is_reported_without_a_fix(step, why):
    src = script(step)
    (d,) = found(src)
    assert f"(no fix: {why}" in d.message
    out = fix_source(src)
    assert "reduce_over_ranks" not in out.code
    assert "scheduler.step(" + step.split("scheduler.step(")[1].split("\n")[0] in out.code


@pytest.mark.parametrize(
    "step",
    [
        "scheduler.step(1.0)",  # nothing of the shard
        "scheduler.step(epoch)",  # the same on every rank
        "other = torch.optim.lr_scheduler.StepLR(opt, 1)\nother.step()",
    ],
)
def test_a_step_that_reads_nothing_of_the_shard_is_clean(step):
    assert found(script(step)) == []


def test_a_total_printed_and_stepped_shares_one_helper_with_ddp409():
    src = script('print(f"loss {total / len(loader):.3f}")\nscheduler.step(total / len(loader))')
    out = fix_source(src)
    assert {d.code for d in out.diagnostics if d.applied} >= {"DDP313", "DDP409"}
    assert out.code.count("def reduce_over_ranks(") == 1
    assert out.code.count("= reduce_over_ranks(") == 1  # reduced once, before the print, and read by both
    assert (
        '        print(f"loss {avg_total / len(loader):.3f}")\n    scheduler.step(avg_total / len(loader))\n'
        in out.code
    )
    converted(src)


def test_a_value_derived_from_a_total_printed_and_stepped_is_reduced_once_where_it_is_derived():
    """DDP409 and DDP313 both reduce where `epoch_loss` is derived, once: the print and the step read the
    run's value, and the step does not sum over the ranks a value that is the run's already."""
    src = script('epoch_loss = total / len(ds)\nprint(f"loss {epoch_loss:.3f}")\nscheduler.step(epoch_loss)')
    out = fix_source(src)
    assert {d.code for d in out.diagnostics if d.applied} >= {"DDP313", "DDP409"}
    assert out.code.count("= reduce_over_ranks(") == 1
    assert "    global_total = reduce_over_ranks(total)\n    epoch_loss = global_total / len(ds)\n" in out.code
    assert '        print(f"loss {epoch_loss:.3f}")\n    scheduler.step(epoch_loss)\n' in out.code
    converted(src)


@pytest.mark.parametrize("backend", ['"gloo"', ""])
def test_a_distributed_script_gets_the_reduction_where_its_group_reduces_on_the_cpu(backend):
    src = DISTRIBUTED_HEAD.format(backend=backend).lstrip()
    (d,) = found(src)
    assert d.message.startswith("ReduceLROnPlateau stepped with this rank's val_loss only")
    out = fix_source(src)
    assert (
        "    avg_val_loss = reduce_over_ranks(val_loss, average=True)\n    mean_loss = avg_val_loss / len(loader)\n"
        "    scheduler.step(mean_loss)\n" in out.code
    )
    assert fix_source(out.code).code == out.code


def test_a_distributed_script_on_nccl_alone_is_reduced_only_with_ddp002s_cpu_backend():
    src = DISTRIBUTED_HEAD.format(backend='"nccl"').lstrip()
    (d,) = found(src, ignore=["DDP002"])
    assert "(no fix: the process group cannot be seen to reduce a CPU tensor)" in d.message
    assert "reduce_over_ranks" not in fix_source(src, ignore=["DDP002"]).code
    out = fix_source(src).code
    assert "cpu:gloo" in out and "mean_loss = avg_val_loss / len(loader)\n" in out


def test_a_validation_loss_over_a_sharded_loader_of_a_distributed_script_is_reported():
    src = DISTRIBUTED_HEAD.format(backend='"gloo"').replace(
        "    mean_loss = val_loss / len(loader)\n    scheduler.step(mean_loss)\n",
        "    scheduler.step(val_loss)\n",
    )
    (d,) = found(src)
    assert "global_val_loss = reduce_over_ranks(val_loss)" in fix_source(src).code


def test_a_list_mean_printed_and_stepped_is_reduced_once():
    src = script('print(f"loss {np.mean(losses):.3f}")\nscheduler.step(np.mean(losses))')
    out = converted(src)
    assert out.count("= reduce_over_ranks(") == 1
    assert "    avg_losses = reduce_over_ranks(np.mean(losses), average=True)\n" in out
    assert '        print(f"loss {avg_losses:.3f}")\n    scheduler.step(avg_losses)\n' in out


def test_a_list_changed_between_the_print_and_the_step_is_reduced_again():
    src = script('print(f"loss {np.mean(losses):.3f}")\nlosses.append(0.0)\nscheduler.step(np.mean(losses))')
    out = fix_source(src).code
    assert out.count("= reduce_over_ranks(np.mean(losses), average=True)") == 2
