"""Training through the script's own modules on a model the script never holds: a function that
builds and trains its model on data no loader brings (`run(5)`), or a class called through an alias whose model a base class
of another module builds (`Exp = Exp_Informer; exp = Exp(args); exp.train()`). No rule can wrap that
model, so DDP301 says where to, and no process group, sampler or guard goes in (each rank would train
its own copy while `apply` reported success)."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

ENGINE = """
import torch
import torch.nn as nn


def run(steps):
    model = nn.Linear(4, 1)
    {wrap}
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print("done")
"""

MAIN = """
from engine import run

if __name__ == "__main__":
    run(5)
"""

BASIC = """
import torch.nn as nn


class ExpBasic:
    def __init__(self, args):
        self.args = args
        self.model = nn.Linear(4, 1)
"""

EXP = """
import torch
from torch import optim

from basic import ExpBasic


class ExpLinear(ExpBasic):
    def _select_optimizer(self):
        return optim.Adam(self.model.parameters(), lr=0.01)

    def train(self, setting):
        model_optim = self._select_optimizer()
        for step in range(3):
            loss = self.model(torch.randn(8, 4)).pow(2).mean()
            model_optim.zero_grad()
            loss.backward()
            model_optim.step()
"""

EXP_MAIN = """
import argparse

from exp import ExpLinear

parser = argparse.ArgumentParser()
args = parser.parse_args()
Exp = ExpLinear
for ii in range(2):
    exp = Exp(args)
    exp.train(f"run{ii}")
"""


def write(folder, **files) -> str:
    for name, text in files.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text).lstrip())
    return str(folder / "main.py")


def found(path: str) -> dict:
    out: dict = {}
    for d in check_source(open(path).read(), path=path, cross_file=True):
        out.setdefault(d.code, []).append(d)
    return out


def test_a_model_built_and_trained_inside_a_module_function_on_data_no_loader_brings(tmp_path):
    """run() builds its model and trains it on batches it draws itself: the wrap would go in run()
    (test_function_model_wraps.py), but no loader reaches that training to shard, so nothing is made."""
    path = write(tmp_path, main=MAIN, engine=ENGINE.replace("{wrap}", ""))
    by = found(path)
    [wrap] = by["DDP301"]
    assert wrap.fix == "none" and "run() trains models it builds itself" in wrap.message
    assert "no DataLoader the script builds was found" in wrap.message
    assert [d.fix for d in by["DDP001"]] == ["none"] and "the fix cannot wrap them there" in by["DDP001"][0].message
    result = fix_source(open(path).read(), path=path, cross_file=True)
    assert result.code == open(path).read() and not result.others


def test_a_module_function_that_wraps_its_model_is_not_reported(tmp_path):
    wrap = "model = torch.nn.parallel.DistributedDataParallel(model)"
    path = write(tmp_path, main=MAIN, engine=ENGINE.replace("{wrap}", wrap))
    assert "DDP301" not in found(path)


def test_a_class_called_through_an_alias_with_its_model_in_a_base_class(tmp_path):
    path = write(tmp_path, main=EXP_MAIN, exp=EXP, basic=BASIC)
    by = found(path)
    [wrap] = by["DDP301"]
    assert wrap.fix == "none" and wrap.message.startswith("exp.train() trains a model the script never holds")
    assert [d.fix for d in by["DDP001"]] == ["none"]


LOADER_LIB = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_loader():
    return DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)


def run(loader, epochs):
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
"""

LOADER_MAIN = """
from lib import build_loader, run

loader = build_loader()
run(loader, 2)
"""


def test_a_factory_loader_handed_to_a_function_that_builds_its_model(tmp_path):
    """The script builds its loader with build_loader() and hands it to run(), which builds and trains
    its own model: the loader gets its sampler where build_loader() builds it, run() the wrap and the
    loader's epoch, and check on the output is clean."""
    path = write(tmp_path, main=LOADER_MAIN, lib=LOADER_LIB)
    by = found(path)
    [shard] = by["DDP201"]
    assert shard.fix == "safe" and "built by build_loader()" in shard.message, shard.message
    result = fix_source(open(path).read(), path=path, cross_file=True)
    assert result.incomplete == [] and "loader = build_loader(distributed=DISTRIBUTED)" in result.code
    lib = next(iter(result.others.values())).code
    assert "        model = DDP(model, " in lib and "            loader.sampler.set_epoch(epoch)\n" in lib
    (tmp_path / "main.py").write_text(result.code)
    (tmp_path / "lib.py").write_text(lib)
    assert [d for d in check_source(result.code, path=path, cross_file=True) if not d.info] == []


def test_a_model_whose_optimizer_another_helper_builds_is_wrapped(tmp_path):
    lib = LOADER_LIB.replace(
        "def run(loader, epochs):\n    model = nn.Linear(4, 1)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n",
        "def build_optimizer(model):\n    return torch.optim.SGD(model.parameters(), lr=0.1)\n\n\n"
        "def run(model, opt, loader, epochs):\n",
    )
    main = "from lib import build_loader, build_optimizer, run\nimport torch.nn as nn\n\nmodel = nn.Linear(4, 1)\n"
    main += "opt = build_optimizer(model)\nloader = build_loader()\nrun(model, opt, loader, 2)\n"
    path = write(tmp_path, main=main, lib=lib)
    by = found(path)
    assert [d.fix for d in by["DDP301"]] == ["safe"] and by["DDP301"][0].line == 4
    assert "model = DDP(model" in fix_source(open(path).read(), path=path, cross_file=True).code
