"""DDP209 on batches a function of the script's own modules trains over, from an object the script
builds with another function of its modules that returns no DataLoader (a batch iterator class of
utils.py): no rule shards it, so the rewrite would train every rank on the same batches; reported
(the contract's invariant 3) rather than left silent."""

from __future__ import annotations

import textwrap

from ddpfix import check_source

UTILS = """
import torch
from torch.utils.data import DataLoader, TensorDataset


class BatchIterator:
    def __init__(self, samples, batch_size):
        self.samples, self.batch_size, self.index = samples, batch_size, 0

    def __iter__(self):
        return self

    def __next__(self):
        if self.index * self.batch_size >= len(self.samples):
            self.index = 0
            raise StopIteration
        chunk = self.samples[self.index * self.batch_size:(self.index + 1) * self.batch_size]
        self.index += 1
        return torch.stack([x for x, _ in chunk]), torch.stack([y for _, y in chunk])


def build_iterator(samples, batch_size):
    return BatchIterator(samples, batch_size)


def build_loader(samples, batch_size):
    return DataLoader(TensorDataset(*map(torch.stack, zip(*samples))), batch_size=batch_size, shuffle=True)
"""

TRAIN = """
import torch
import torch.nn as nn


def train(model, train_iter, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in train_iter:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
"""

MAIN = """
import torch
import torch.nn as nn

from train_eval import train
from utils import {factory}

samples = [(torch.randn(4), torch.randn(1)) for _ in range(32)]
train_iter = {factory}(samples, 8)
model = nn.Linear(4, 1)
train(model, train_iter, 2)
"""


def main(tmp_path, factory: str) -> str:
    (tmp_path / "utils.py").write_text(textwrap.dedent(UTILS).lstrip())
    (tmp_path / "train_eval.py").write_text(textwrap.dedent(TRAIN).lstrip())
    path = tmp_path / "main.py"
    path.write_text(textwrap.dedent(MAIN).lstrip().replace("{factory}", factory))
    return str(path)


def ddp209(path: str) -> list:
    return [d for d in check_source(open(path).read(), path=path, cross_file=True) if d.code == "DDP209"]


def test_a_batch_iterator_of_the_scripts_modules_is_reported(tmp_path):
    path = main(tmp_path, "build_iterator")
    [d] = ddp209(path)
    assert d.fix == "none" and d.line == 10
    assert "train_iter, which build_iterator() builds and train() in train_eval.py trains over" in d.message


def test_a_loader_factory_is_not_reported_here(tmp_path):
    assert ddp209(main(tmp_path, "build_loader")) == []
