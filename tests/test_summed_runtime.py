"""DDP212's fix, run for real: a count of right answers summed over the validation loader and
all-reduced (a helper written for several processes) prints under torchrun, on rank 0, what `python
train.py` prints; left whole on every rank, the all-reduce would add the ranks' whole-set counts."""

from __future__ import annotations

import textwrap

import pytest
from test_metric_reduce_runtime import converted_runs

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    @torch.no_grad()
    def count_correct(model, loader):
        correct = torch.zeros(1)
        for x, y in loader:
            correct += (model(x).argmax(1) == y).sum()
        if dist.is_available() and dist.is_initialized():
            dist.all_reduce(correct)
        return int(correct.item())


    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    val_set = TensorDataset(torch.randn(21, 4), torch.randint(0, 3, (21,)))
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=4)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)  # the model stays as it is: plain and DDP agree
    for epoch in range(2):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        model.eval()
        print(f"epoch {epoch} correct {count_correct(model, val_loader)} of {len(val_set)}")
    """
).lstrip()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_reduced_count_is_the_single_process_count(tmp_path):
    code, plain, ddp = converted_runs(tmp_path, SCRIPT, "epoch 1 correct")
    assert "val_sampler = range(RANK, len(val_set), WORLD_SIZE) if DISTRIBUTED else None" in code
    lines = [line for line in plain.splitlines() if line.startswith("epoch")]
    assert len(lines) == 2 and all(line.endswith("of 21") for line in lines)
    assert [line for line in ddp.splitlines() if line.startswith("epoch")] == lines
