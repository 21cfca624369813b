"""A model a method of a class of the script's modules builds and trains as its own local (golden
trainer_builds_model_in_method: `Trainer(args).train()`, with `model = Forecaster(...)`, `model =
model.to(self.device)` and the optimizer built over `model.parameters()` in `Trainer.train`): the wrap
goes in that method, before the optimizer, decided at run time; where it cannot be made there, nothing
is converted and the findings say why."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from local_files import by_code, edit, golden_project

import ddpfix
from ddpfix.analysis.class_models import ast_local_models

CASE = Path(__file__).parent / "golden" / "trainer_builds_model_in_method"
BUILD = "        model = Forecaster(hidden=16)\n"
MOVE = "        model = model.to(self.device)\n"
OPTIMIZER = "        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(CASE, tmp_path, "trainer.py")


def test_the_summary_names_the_local_model_of_the_method(project):
    tree = ast.parse((project / "trainer.py").read_text())
    [trainer] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer"]
    assert ast_local_models(trainer) == [("train", "model", 25)]


def test_the_local_model_is_wrapped_in_its_method_before_its_optimizer(project):
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.applied and "model in train() at trainer.py:25" in wrap.message, wrap.message
    assert result.incomplete == []
    text = result.others["trainer.py"].code
    assert MOVE + "        if dist.is_initialized():\n            model = DDP(model, " in text
    assert "getattr(model, 'module', model).hidden" in text  # what only the model has
    assert 'torch.save(getattr(model, "module", model).state_dict(), self.args.out)' in text


SHAPES = {
    "put in DataParallel": (
        MOVE,
        MOVE + "        model = nn.DataParallel(model)\n",
        "is put in nn.DataParallel in train()",
    ),
    "handed to a helper": (
        OPTIMIZER,
        OPTIMIZER + "        self.remember(model)\n",
        "model is handed on at trainer.py",
    ),
    "built in a branch": (
        BUILD,
        "        if self.args.epochs:\n            model = Forecaster(hidden=16)\n",
        "model is bound inside a block of train()",
    ),
    "rebound after its optimizer": (
        "        for epoch in range(self.args.epochs):\n",
        "        model = model.float()\n        for epoch in range(self.args.epochs):\n",
        "model is bound again after its optimizer is built in train()",
    ),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_a_local_model_the_fix_cannot_wrap_there_leaves_the_whole_script_alone(project, shape):
    old, new, why = SHAPES[shape]
    edit(project / "trainer.py", old, new)
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and why in wrap.message, wrap.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP301"} <= {b.code for b in result.incomplete}


def test_an_annotated_build_is_a_build(project):
    edit(project / "trainer.py", BUILD, "        model: nn.Module = Forecaster(hidden=16)\n")
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.applied and "model in train() at trainer.py:25" in wrap.message, wrap.message
    assert MOVE + "        if dist.is_initialized():\n" in result.others["trainer.py"].code
