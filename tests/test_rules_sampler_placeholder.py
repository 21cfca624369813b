"""DDP201 on a loader whose sampler slot is empty on every path (`train_sampler = None`, then
`DataLoader(..., shuffle=(train_sampler is None), sampler=train_sampler)`): every rank draws the whole
dataset, so distributed runs fill the slot with a DistributedSampler."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def set_loader(batch_size):
    train_dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    train_sampler = None
    train_loader = DataLoader(train_dataset, batch_size=batch_size, {shuffle}sampler=train_sampler)
    return train_loader


def main():
    train_loader = set_loader(8)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()


if __name__ == "__main__":
    main()
"""


def script(shuffle: str = "shuffle=(train_sampler is None), ") -> str:
    return textwrap.dedent(SCRIPT).lstrip().replace("{shuffle}", shuffle)


def ddp201(src: str) -> list:
    return [d for d in check_source(src) if d.code == "DDP201"]


def test_an_empty_sampler_slot_gets_a_distributed_sampler_and_set_epoch():
    src = script()
    [d] = ddp201(src)
    assert d.fix == "safe" and "`train_sampler = None` on every path" in d.message
    assert (
        d.line
        == src.splitlines().index(
            "    train_loader = DataLoader(train_dataset, batch_size=batch_size, "
            "shuffle=(train_sampler is None), sampler=train_sampler)"
        )
        + 1
    )
    out = fix_source(src).code
    assert "    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None\n" in out, out
    assert "        if DISTRIBUTED:\n            train_loader.sampler.set_epoch(epoch)\n" in out, out
    assert ddp201(out) == [] and fix_source(out).code == out


def test_a_loader_that_does_not_shuffle_keeps_its_order_in_the_sampler():
    out = fix_source(script(shuffle="")).code
    assert "train_sampler = DistributedSampler(train_dataset, shuffle=False) if DISTRIBUTED else None" in out, out


def test_a_loader_that_also_shuffles_is_reported_without_a_fix():
    """`shuffle=True` beside a sampler raises in DataLoader: the slot cannot simply be filled."""
    [d] = ddp201(script(shuffle="shuffle=True, "))
    assert d.fix == "none" and "pass shuffle=(train_sampler is None)" in d.message


def test_a_dataset_bound_after_the_slot_is_reported_without_a_fix():
    src = script().replace(
        "    train_dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))\n    train_sampler = None\n",
        "    train_sampler = None\n    train_dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))\n",
    )
    [d] = ddp201(src)
    assert d.fix == "none" and "bound after `train_sampler = None`" in d.message
