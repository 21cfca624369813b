"""A script with no torch of its own that trains through an engine class whose training methods are
inherited from a base class of another module (`GMFEngine(Engine)` in gmf.py, `Engine.train_an_epoch`
in engine.py): followed through both modules, and reported rather than passed over in silence."""

from __future__ import annotations

from ddpfix import fix_project

ENGINE = """
import torch


class Engine:
    def __init__(self, config):
        self.config = config
        self.opt = torch.optim.Adam(self.model.parameters(), lr=config["lr"])
        self.crit = torch.nn.MSELoss()

    def train_an_epoch(self, loader, epoch):
        self.model.train()
        for x, y in loader:
            self.opt.zero_grad()
            loss = self.crit(self.model(x), y)
            loss.backward()
            self.opt.step()
        print(f"epoch {epoch} done")
"""

GMF = """
import torch.nn as nn

from engine import Engine


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        return self.fc(x)


class NetEngine(Engine):
    def __init__(self, config):
        self.model = Net()
        super().__init__(config)
"""

DATA = """
import torch
from torch.utils.data import DataLoader, TensorDataset


def make_loader(batch_size):
    return DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=batch_size, shuffle=True)
"""

SCRIPT = """
from data import make_loader
from gmf import NetEngine

config = {"lr": 0.01, "epochs": 2}
engine = NetEngine(config)
for epoch in range(config["epochs"]):
    loader = make_loader(8)
    engine.train_an_epoch(loader, epoch)
"""


def test_inherited_training_method_of_another_module_is_reported(tmp_path):
    for name, text in {"engine": ENGINE, "gmf": GMF, "data": DATA, "train": SCRIPT}.items():
        (tmp_path / f"{name}.py").write_text(text)
    result = fix_project(str(tmp_path / "train.py"))
    found = {d.code: d for d in result.diagnostics}
    call_line = SCRIPT.splitlines().index("    engine.train_an_epoch(loader, epoch)") + 1
    assert found["DDP301"].line == call_line and found["DDP301"].fix == "none"
    assert "engine.train_an_epoch() trains a model" in found["DDP301"].message
    assert found["DDP001"].fix == "none"
    assert result.code == SCRIPT and result.others == {}  # nothing half converted
    assert {b.code for b in result.incomplete} >= {"DDP301", "DDP001"}
