"""A Solver class of the script's own module that keeps a slot for its model (`self.unet = None` in
`__init__`) and builds it in a method: the slot hands it no model, so the class trains a model it
builds itself (DDP301 reports it there). Where that wrap cannot be made, no part of the conversion is
(DDP001 and DDP201 withheld), also for a training loader a factory of another module builds. The
entry script imports no torch itself, and is still read as the training script it is."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SOLVER = """
import torch
import torch.nn as nn


class Solver:
    def __init__(self, config, train_loader):
        self.train_loader = train_loader
        self.unet = None
        self.optimizer = None
        self.lr = config.lr
        self.build_model()

    def build_model(self):
        {build}
        self.optimizer = torch.optim.Adam(list(self.unet.parameters()), self.lr)

    def train(self):
        for epoch in range(2):
            for x, y in self.train_loader:
                loss = nn.functional.mse_loss(self.unet(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
"""

LOADERS = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def get_loader(batch_size):
    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    return DataLoader(dataset, batch_size=batch_size, shuffle=True)
"""

MAIN = """
import argparse

from data_loader import get_loader
from solver import Solver


def main(config):
    train_loader = get_loader(config.batch_size)
    solver = Solver(config, train_loader)
    solver.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--batch_size", type=int, default=4)
    main(parser.parse_args())
"""

ONCE = "self.unet = nn.Linear(4, 1)"
CHOSEN = "if self.lr > 0:\n            self.unet = nn.Linear(4, 1)\n        else:\n            self.unet = nn.Linear(4, 1, bias=False)"


def folder(tmp_path, build: str):
    (tmp_path / "solver.py").write_text(textwrap.dedent(SOLVER).lstrip().replace("{build}", build))
    (tmp_path / "data_loader.py").write_text(textwrap.dedent(LOADERS).lstrip())
    main = tmp_path / "main.py"
    main.write_text(textwrap.dedent(MAIN).lstrip())
    return main


def by_code(main) -> dict:
    found: dict = {}
    for d in check_source(main.read_text(), path=str(main), cross_file=True):
        found.setdefault(d.code, []).append(d)
    return found


def test_a_model_slot_is_not_a_model_handed_in(tmp_path):
    """main.py imports no torch itself: it trains through its modules alone, and is read as a script."""
    main = folder(tmp_path, ONCE)
    found = by_code(main)
    assert "torch" not in main.read_text() and [d.fix for d in found["DDP001"]] == ["none"]
    [d] = found["DDP301"]
    assert "trains models Solver builds itself" in d.message and "self.unet at solver.py:" in d.message


def test_no_sampler_from_a_factory_where_the_wrap_cannot_be_made(tmp_path):
    main = folder(tmp_path, CHOSEN)
    found = by_code(main)
    [wrap] = found["DDP301"]
    assert wrap.fix == "none" and "self.unet is assigned 3 times in Solver" in wrap.message
    [shard] = found["DDP201"]
    assert shard.fix == "none" and "built by get_loader()" in shard.message
    assert "wrap them there first, then shard the data" in shard.message
    result = fix_source(main.read_text(), path=str(main), cross_file=True)
    assert result.code == main.read_text() and not result.others
