"""DDP409 on meters whose class the script imports from a module of its own (`from utils import
AverageMeter`, `utils.AverageMeter("Acc@1", ":6.2f")`): read from that module as the script's own."""

from __future__ import annotations

from local_files import write
from test_rules_meters import AVERAGE_METER

from ddpfix import check_source, fix_project

NAMED_METER = AVERAGE_METER.replace(
    "    def __init__(self):\n",
    '    def __init__(self, name="", fmt=":f"):\n        self.name = name\n        self.fmt = fmt\n',
)

SCRIPT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import utils
from utils import AverageMeter


def train(model, loader, opt):
    losses = AverageMeter()
    top1 = utils.AverageMeter("Acc@1", ":6.2f")
    for x, y in loader:
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.update(loss.item(), len(x))
        top1.update(out.argmax(1).eq(y).float().mean().item() * 100, len(x))
    return losses, top1


torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    losses, top1 = train(model, loader, opt)
    print(f"epoch {epoch} loss {losses.avg:.4f} acc {top1.avg:.2f} over {losses.count}")
"""

SHOWN = '    print(f"epoch {epoch} loss {losses.avg:.4f} acc {top1.avg:.2f} over {losses.count}")'


def _project(tmp_path, module: str = NAMED_METER, script: str = SCRIPT):
    write(tmp_path, "utils.py", module.lstrip("\n"))
    return write(tmp_path, "train.py", script)


def ddp409(path) -> list:
    return [d for d in check_source(path.read_text(), path=str(path)) if d.code == "DDP409"]


def test_imported_meter_is_reported_and_its_totals_reduced_with_its_average(tmp_path):
    path = _project(tmp_path)
    [d] = ddp409(path)
    assert d.line == SCRIPT.lstrip().splitlines().index(SHOWN) + 1 and d.fix == "safe"
    assert "losses, top1 would sum this rank's shard only" in d.message
    result = fix_project(str(path))
    reduced = (
        "    losses.sum = reduce_over_ranks(losses.sum)\n"
        "    losses.count = reduce_over_ranks(losses.count)\n"
        "    losses.avg = losses.sum / losses.count\n"
        "    top1.sum = reduce_over_ranks(top1.sum)\n"
        "    top1.count = reduce_over_ranks(top1.count)\n"
        "    top1.avg = top1.sum / top1.count\n"
        "    if RANK == 0:\n"
    )
    assert reduced in result.code, result.diff
    assert result.others == {} and result.incomplete == []  # the module itself is left as it is
    path.write_text(result.code)
    assert ddp409(path) == []


def test_imported_meter_that_reduces_its_own_totals_is_quiet(tmp_path):
    module = "import torch\nimport torch.distributed as dist\n" + NAMED_METER.replace(
        "        self.avg = self.sum / self.count\n",
        "        self.avg = self.sum / self.count\n\n"
        "    def all_reduce(self):\n"
        "        total = torch.tensor([self.sum, self.count])\n"
        "        dist.all_reduce(total)\n",
    )
    assert "dist.all_reduce(total)" in module
    assert ddp409(_project(tmp_path, module)) == []


def test_imported_meter_keeping_other_state_is_reported_without_a_fix(tmp_path):
    module = NAMED_METER.replace(
        "        self.sum += val * n\n", "        self.sum += val * n\n        self.history = self.sum\n"
    )
    assert "self.history = self.sum" in module
    path = _project(tmp_path, module)
    assert {d.fix for d in ddp409(path)} == {"none"}
    assert "reduce_over_ranks" not in fix_project(str(path)).code


def test_a_class_of_the_script_shadows_the_imported_one(tmp_path):
    """`AverageMeter` defined in the script after the import: the script's class is the one instantiated
    (here one that keeps no totals), and `utils.AverageMeter` is still read from the module."""
    script = SCRIPT.replace(
        "\n\ndef train(",
        "\n\nclass AverageMeter:\n    def update(self, val, n=1):\n        self.val = val\n\n\ndef train(",
    )
    [d] = ddp409(_project(tmp_path, script=script))
    assert d.message.startswith("after the conversion, top1 would sum")


def test_an_unreadable_module_gives_no_meter(tmp_path):
    path = _project(tmp_path, module="class AverageMeter(:\n")
    assert ddp409(path) == []
    assert "reduce_over_ranks" not in fix_project(str(path)).code
