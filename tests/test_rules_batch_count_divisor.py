"""DDP409: a total divided by the whole dataset's number of batches (`len(loader.dataset) /
loader.batch_size`, `len(ds) // batch_size`) is divided by the same number on every rank, as by the
dataset's size: it is summed over the ranks, not averaged (averaged, it prints half the plain run's value
on 2 ranks)."""

from __future__ import annotations

import textwrap

import pytest

from ddpfix import fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    batch_size = 8
    ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=batch_size, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        running = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            running += loss.item()
        print(f"epoch {{epoch}}: {{running / {divisor}:.4f}}")
    """
)


@pytest.mark.parametrize("divisor", ["(len(loader.dataset) / loader.batch_size)", "(len(ds) // batch_size)"])
def test_a_total_over_the_whole_runs_number_of_batches_is_summed(divisor):
    code = fix_source(SCRIPT.format(divisor=divisor)).code
    assert "global_running = reduce_over_ranks(running)\n" in code


def test_a_total_over_this_ranks_number_of_batches_is_still_averaged():
    code = fix_source(SCRIPT.format(divisor="len(loader)")).code
    assert "avg_running = reduce_over_ranks(running, average=True)\n" in code
