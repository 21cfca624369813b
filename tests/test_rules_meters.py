"""DDP409 on totals kept in meter objects: a class of the script accumulating into `self.<attr>` with
`+=`, filled over a sharded loader and shown."""

from __future__ import annotations

from ddpfix import check_source, fix_source

AVERAGE = """
class Average:
    def __init__(self):
        self.sum = 0.0
        self.count = 0

    @property
    def average(self):
        return self.sum / self.count

    def update(self, value, n):
        self.sum += value * n
        self.count += n
"""

AVERAGE_METER = """
class AverageMeter:
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count
"""

DISTRIBUTED = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
{meter}

def train(model, loader, opt):
    losses = {cls}()
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.update(loss.item(), len(x))
    return losses


dist.init_process_group("{backend}")
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, sampler={sampler})
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    losses = train(model, loader, opt)
    if dist.get_rank() == 0:
        print(f"epoch {{epoch}} loss {{losses.{shown}:.4f}}")
"""

CONVERTED = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
{meter}

torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
{outer}for epoch in range(2):
    {inner}for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.update(loss.item(), len(x))
    print(f"epoch {{epoch}} loss {{losses.{shown}:.4f}}")
    print(f"epoch {{epoch}} samples {{losses.count}}")
"""


def distributed(meter=AVERAGE, cls="Average", backend="gloo", sampler="DistributedSampler(ds)", shown="average"):
    return DISTRIBUTED.format(meter=meter, cls=cls, backend=backend, sampler=sampler, shown=shown)


def converted(meter=AVERAGE, cls="Average", shown="average", fresh=True):
    made = f"losses = {cls}()\n"
    return CONVERTED.format(meter=meter, shown=shown, outer="" if fresh else made, inner=made + "    " if fresh else "")


def ddp409(src, **options):
    return [d for d in check_source(src, **options) if d.code == "DDP409"]


def test_meter_returned_by_the_function_that_fills_it_is_reported_and_reduced_before_the_guard():
    src = distributed()
    [d] = ddp409(src)
    assert d.line == src.splitlines().index('        print(f"epoch {epoch} loss {losses.average:.4f}")') + 1
    assert d.fix != "none" and d.message.startswith("losses summed over this rank's shard only")
    out = fix_source(src, select=["DDP409"]).code
    reduced = (
        "    losses.sum = reduce_over_ranks(losses.sum)\n"
        "    losses.count = reduce_over_ranks(losses.count)\n"
        "    if dist.get_rank() == 0:\n"
    )
    assert reduced in out
    assert ddp409(out) == []


def test_meter_on_an_nccl_group_is_reported_without_a_fix():
    """NCCL alone cannot reduce the CPU values the fix would (unless DDP002 gives the group a CPU backend
    in the same apply)."""
    src = distributed(backend="nccl")
    [d] = ddp409(src, ignore=["DDP002"])
    assert d.fix == "none"
    result = fix_source(src, ignore=["DDP002"])
    assert "reduce_over_ranks" not in result.code
    assert [b.code for b in result.incomplete if b.code == "DDP409"] == ["DDP409"]
    assert [d.fix for d in ddp409(src)] == ["safe"]


def test_meter_over_an_unsharded_loader_is_quiet():
    assert ddp409(distributed(sampler="None")) == []


def test_meter_average_computed_from_its_totals_is_computed_again_after_the_reduction():
    """AverageMeter: totals set by `reset()` (called from `__init__`), `self.avg = self.sum / self.count`
    recomputed from the reduced totals, the last value `self.val = val` left as it is."""
    src = converted(AVERAGE_METER, "AverageMeter", shown="avg")
    found = ddp409(src)
    assert [d.fix for d in found] == ["safe", "safe"]
    result = fix_source(src)
    reduced = (
        "losses.sum = reduce_over_ranks(losses.sum)\n"
        "    losses.count = reduce_over_ranks(losses.count)\n"
        "    losses.avg = losses.sum / losses.count\n"
    )
    assert reduced in result.code and "losses.val = " not in result.code
    assert [b.code for b in result.incomplete] == []


def test_meter_that_keeps_other_state_is_reported_without_a_fix():
    peak = AVERAGE_METER.replace("        self.val = val\n", "        self.val = max(self.val, val)\n")
    src = converted(peak, "AverageMeter", shown="avg")
    found = ddp409(src)
    assert [d.fix for d in found] == ["none", "none"]
    assert "AverageMeter also stores self.val as it updates" in found[0].message
    out = fix_source(src).code
    assert "losses.sum = " not in out and "reduce_over_ranks" not in out
    assert [b.code for b in fix_source(src).incomplete] == ["DDP409", "DDP409"]


def test_meter_shown_twice_is_reduced_once():
    src = converted()
    found = ddp409(src)
    assert [d.fix for d in found] == ["safe", "safe"]
    out = fix_source(src).code
    assert out.count("losses.count = reduce_over_ranks(losses.count)") == 1
    assert fix_source(src).incomplete == []


def test_meter_accumulating_over_the_epochs_is_shown_through_a_reduced_copy():
    """Made once before the epoch loop: reduced into itself each epoch, it would add up every rank's
    earlier epochs once per rank. A copy with the totals reduced is what the prints show (both prints of
    one block through one copy); the meter goes on counting this rank's shard."""
    src = converted(AVERAGE_METER, "AverageMeter", shown="avg", fresh=False)
    found = ddp409(src)
    assert [d.fix for d in found] == ["safe", "safe"]
    result = fix_source(src)
    copied = (
        "    global_losses = copy.copy(losses)\n"
        "    global_losses.sum = reduce_over_ranks(losses.sum)\n"
        "    global_losses.count = reduce_over_ranks(losses.count)\n"
        "    global_losses.avg = global_losses.sum / global_losses.count\n"
        "    if RANK == 0:\n"
        '        print(f"epoch {epoch} loss {global_losses.avg:.4f}")\n'
        '        print(f"epoch {epoch} samples {global_losses.count}")\n'
    )
    assert copied in result.code and result.code.count("copy.copy(") == 1
    assert "losses.sum = reduce" not in result.code.replace("global_losses.sum = reduce", "")
    assert result.incomplete == [] and ddp409(result.code) == []


def test_running_average_inside_the_loop_is_shown_through_a_copy_and_reduced_in_place_after_it():
    """Printed every few steps inside the loop that fills it (the meter keeps accumulating there), then
    once after the loop: a reduced copy inside, the meter itself reduced after the loop."""
    src = (
        converted(AVERAGE_METER, "AverageMeter", shown="avg")
        .replace(
            "        losses.update(loss.item(), len(x))\n",
            "        losses.update(loss.item(), len(x))\n"
            "        if step % 2 == 0:\n"
            '            print(f"step {step} running loss {losses.avg:.4f}")\n'
            "        losses.update(0.0, 0)\n"
            "        if step % 2 == 0:\n"
            '            print(f"step {step} samples {losses.count}")\n',
        )
        .replace("for x, y in loader:", "for step, (x, y) in enumerate(loader):")
    )
    found = ddp409(src)
    assert [d.fix for d in found] == ["safe"] * 4
    result = fix_source(src)
    # an update between the two prints: each shows its own copy
    assert result.code.count("global_losses = copy.copy(losses)") == 2
    assert result.code.count("    losses.sum = reduce_over_ranks(losses.sum)\n") == 1
    assert result.incomplete == [] and ddp409(result.code) == []


def test_running_average_in_a_while_loop_is_not_reduced():
    """A `while` that ranks may leave apart: no collective inside it, copy or not."""
    src = converted(AVERAGE_METER, "AverageMeter", shown="avg", fresh=False).replace(
        "        losses.update(loss.item(), len(x))\n",
        "        losses.update(loss.item(), len(x))\n"
        "        while losses.count > 1000:\n"
        '            print(f"running loss {losses.avg:.4f}")\n'
        "            break\n",
    )
    found = [d for d in ddp409(src) if "running loss" in src.splitlines()[d.line - 1]]
    assert [d.fix for d in found] == ["none"]
    out = fix_source(src).code
    assert "while losses.count > 1000:\n" in out
    assert out.index("global_losses = copy.copy") > out.index("while losses.count > 1000:\n            ")


def test_meter_that_reduces_its_own_totals_is_quiet():
    meter = AVERAGE + "\n    def synchronize(self):\n        dist.all_reduce(torch.tensor([self.sum, self.count]))\n"
    assert ddp409(distributed(meter=meter)) == []


def test_meter_given_values_the_ranks_reduced_is_quiet():
    """`dist.all_reduce(reduced)`, then `losses.update(reduced.item() / world, n)`: every rank's meter holds
    the run's average already."""
    src = distributed().replace(
        "        losses.update(loss.item(), len(x))",
        "        reduced = loss.detach().clone()\n"
        "        dist.all_reduce(reduced)\n"
        "        losses.update(reduced.item() / dist.get_world_size(), len(x))",
    )
    assert "dist.all_reduce(reduced)" in src
    assert ddp409(src) == []
    unreduced = src.replace("        dist.all_reduce(reduced)\n", "")
    assert len(ddp409(unreduced)) == 1


def test_class_counting_its_calls_is_no_meter():
    counter = """
class Steps:
    def __init__(self):
        self.count = 0

    @property
    def average(self):
        return self.count

    def update(self, value, n):
        self.count += 1
"""
    assert ddp409(distributed(meter=counter, cls="Steps")) == []


SUBCLASS = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset
{meter}

class ShardedLoader(DataLoader):
    def __init__(self, dataset, batch_size, shard=True):
        sampler = DistributedSampler(dataset) if shard else None
        super().__init__(dataset, batch_size=batch_size, sampler=sampler)


class Runner:
    def __init__(self, model, opt, loader):
        self.model = model
        self.opt = opt
        self.loader = loader

    def fit(self, epochs):
        for epoch in range(epochs):
            losses = self.epoch()
            if dist.get_rank() == 0:
                print(f"epoch {{epoch}} loss {{losses.average:.4f}}")

    def epoch(self):
        losses = Average()
        for x, y in self.loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.update(loss.item(), len(x))
        return losses


dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 1))
loader = ShardedLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), 8)
Runner(model, torch.optim.SGD(model.parameters(), lr=0.1), loader).fit(2)
"""


def test_meter_over_a_loader_subclass_with_its_own_sampler_handed_to_a_class():
    src = SUBCLASS.format(meter=AVERAGE)
    [d] = ddp409(src, select=["DDP409"])
    assert d.line == src.splitlines().index('                print(f"epoch {epoch} loss {losses.average:.4f}")') + 1
    out = fix_source(src, select=["DDP409"]).code
    reduced = "            losses.sum = reduce_over_ranks(losses.sum)\n            losses.count = reduce_over_ranks(losses.count)\n"
    assert reduced + "            if dist.get_rank() == 0:" in out


def test_meter_average_computed_before_its_totals_move_gets_no_fix():
    """`self.avg = self.sum / self.count` before the `+=`: the class shows the previous update's average, so
    computing it again from the totals would change what `python train.py` prints."""
    stale = AVERAGE_METER.replace(
        "        self.val = val\n        self.sum += val * n\n        self.count += n\n        self.avg = self.sum / self.count\n",
        "        self.avg = self.sum / max(self.count, 1)\n        self.sum += val * n\n        self.count += n\n",
    )
    assert stale != AVERAGE_METER
    found = ddp409(converted(stale, "AverageMeter", shown="avg"))
    assert [d.fix for d in found] == ["none", "none"]
    assert "AverageMeter also stores self.avg as it updates" in found[0].message
