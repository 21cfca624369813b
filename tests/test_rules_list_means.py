"""DDP409 on lists: the mean of a list a sharded loop appends this rank's values to, shown as the run's."""

from __future__ import annotations

import textwrap

import pytest
from invariants import converted

from ddpfix import check_source, fix_source

SCRIPT = """
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    losses = []
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
{shown}
""".lstrip()

DISTRIBUTED = """
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
model = DDP(nn.Linear(4, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
losses = []
for x, y in loader:
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
if dist.get_rank() == 0:
    print(f"mean loss {np.mean(losses):.4f}")
""".lstrip()


def script(shown: str) -> str:
    return SCRIPT.format(shown=textwrap.indent(textwrap.dedent(shown).strip(), "    "))


def found(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP409"]


@pytest.mark.parametrize(
    "shown, mean",
    [
        ('print(f"loss {np.mean(losses):.4f}")', "np.mean(losses)"),
        ('print("loss", statistics.mean(losses))', "statistics.mean(losses)"),
        ('print(f"loss {sum(losses) / len(losses):.4f}")', "sum(losses) / len(losses)"),
    ],
)
def test_a_list_mean_shown_is_averaged_over_the_ranks_first(shown, mean):
    src = script(shown).replace("import numpy as np\n", "import statistics\n\nimport numpy as np\n")
    (d,) = found(src)
    assert d.message.startswith("after the conversion, losses would average this rank's shard only")
    out = converted(src)
    assert f"    avg_losses = reduce_over_ranks({mean}, average=True)\n" in out
    assert mean not in out.split("avg_losses = ")[1].split("\n", 1)[1]  # the print reads the averaged value


@pytest.mark.parametrize(
    "shown",
    [
        'print(f"last {losses[-1]:.4f}")',  # one batch's value, not the shard's
        'print(f"batches {len(losses)}")',
    ],
)
def test_a_list_read_other_than_by_its_mean_is_not_reported(shown):
    assert found(script(shown)) == []


def test_a_distributed_scripts_list_mean_is_averaged_before_the_rank0_guard():
    (d,) = found(DISTRIBUTED)
    assert d.message.startswith("losses averaged over this rank's shard only, logged as if global")
    out = fix_source(DISTRIBUTED).code
    assert "avg_losses = reduce_over_ranks(np.mean(losses), average=True)\nif dist.get_rank() == 0:\n" in out
    assert 'print(f"mean loss {avg_losses:.4f}")' in out
    assert fix_source(out).code == out


def test_a_list_of_an_unsharded_loader_is_not_reported():
    src = DISTRIBUTED.replace(
        '    print(f"mean loss {np.mean(losses):.4f}")',
        "    val_losses = []\n"
        "    with torch.no_grad():\n"
        "        for x, y in DataLoader(ds, batch_size=8):\n"
        "            val_losses.append(nn.functional.mse_loss(model(x), y).item())\n"
        '    print(f"val loss {np.mean(val_losses):.4f}")',
    )
    assert "val_losses.append" in src
    assert found(src) == []
