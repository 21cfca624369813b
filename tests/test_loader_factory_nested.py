"""A helper of the script that returns its loaders in a tuple nested in its return value
(`return (train_loader, val_loader), class_weights`), unpacked in two steps by the caller (`loaders,
weights = load_dataset()`, then `train_loader, val_loader = loaders`): the training loader is found
where it is iterated, and DDP201 shards it in the helper, leaving the validation loader alone."""

from __future__ import annotations

import libcst as cst

from ddpfix import fix_source
from ddpfix.analysis import ScriptFacts

SCRIPT = """\
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def load_dataset():
    train_set = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    val_set = TensorDataset(torch.randn(16, 8), torch.randint(0, 3, (16,)))
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=8)
    return (train_loader, val_loader), torch.ones(3)


if __name__ == "__main__":
    loaders, weights = load_dataset()
    train_loader, val_loader = loaders
    model = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in train_loader:
            loss = nn.functional.cross_entropy(model(x), y, weight=weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""


def test_the_names_a_nested_tuple_is_unpacked_into_are_followed():
    facts = ScriptFacts(cst.parse_module(SCRIPT), SCRIPT, None, None)
    training = [(loader.target, loader.factory.name.value) for loader, _ in facts.data.training_loaders]
    assert training == [("train_loader", "load_dataset")]  # the caller's name, built by the helper
    assert {loader.target for loader in facts.data.loaders} >= {"train_loader", "val_loader"}


def test_the_training_loader_is_sharded_in_the_helper():
    result = fix_source(SCRIPT)
    assert "    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None\n" in result.code
    assert "    val_loader = DataLoader(val_set, batch_size=8)\n" in result.code
    assert "DDP201" in {d.code for d in result.diagnostics if d.applied}
    assert not result.incomplete
