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


@pytest.mark.parametrize(
    "grown, shown",
    [
        ('line = "losses:"', 'line += f" {loss.item():.3f}"'),  # a string grown per batch
        ("y_true = []", "y_true += y.flatten().tolist()"),  # a list grown per batch
    ],
)
def test_a_string_or_list_grown_in_the_loop_is_no_total(grown, shown):
    name = grown.split(" = ")[0]
    src = (
        SCRIPT.format(shown=f'    print(f"{{{name}}}")')
        .replace("    losses = []\n", f"    losses = []\n    {grown}\n")
        .replace("        losses.append(loss.item())\n", f"        losses.append(loss.item())\n        {shown}\n")
    )
    assert f"        {shown}\n" in src
    assert found(src) == []


@pytest.mark.parametrize(
    "bar",
    [
        "for i, (x, y) in tqdm(enumerate(loader)):",
        "bar = tqdm(enumerate(loader), total=len(loader))\n    for i, (x, y) in bar:",
    ],
)
def test_a_step_counter_through_a_progress_bar_lets_every_rank_reach_a_periodic_print(bar):
    src = (
        SCRIPT.format(shown="")
        .replace("import numpy as np\n", "import numpy as np\nfrom tqdm import tqdm\n")
        .replace("    for x, y in loader:", "    " + bar)
        .replace(
            "        losses.append(loss.item())\n",
            '        losses.append(loss.item())\n        if i % 2 == 0:\n            print(f"{np.mean(losses):.4f}")\n',
        )
    )
    (d,) = found(src)
    assert d.fix == "safe", d.message
    assert "            avg_losses = reduce_over_ranks(np.mean(losses), average=True)\n" in fix_source(src).code


def test_a_list_mean_shown_where_not_every_rank_reaches_alike_is_reported_without_a_fix():
    src = script('if np.mean(losses) < 1.0:\n    print(f"loss {np.mean(losses):.4f}")')
    (d,) = found(src)
    assert "(no fix: not every rank reaches the statement alike)" in d.message
    assert "reduce_over_ranks(np.mean" not in fix_source(src).code


def test_a_total_divided_in_place_is_reduced_by_its_divisor_where_it_was_last_bound():
    """`total = total / len(loader.sampler)` before the print: this rank's mean once the sampler is a
    DistributedSampler, so averaged; shown before that division, the sum (as it is). (The function
    `scaled`, defined first, divides a local of the same name; it comes before the accumulation, so this
    test does not tell whether its division would be taken for the total's.)"""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def scaled(total, n):
            total = total / n
            return total


        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            total = 0.0
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(x)
            print(f"sum {total:.4f}")
            total = total / len(loader.sampler)
            print(f"mean {total:.4f}")
        """
    ).lstrip()
    out = fix_source(src).code
    assert "global_total = reduce_over_ranks(total)\n" in out  # the first print: the sum, as it is
    assert "avg_total = reduce_over_ranks(total, average=True)\n" in out  # after the division: a mean
