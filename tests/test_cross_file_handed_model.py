"""A class of the script's own modules handed the model, that builds its optimizer over it and trains
it (golden trainer_builds_optimizer): the model is the script's trained model, wrapped in DDP in the
script before the hand-over; a class that does not train it, or wraps it itself, hands nothing back."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

import ddpfix
from ddpfix.analysis.kept_models import ast_kept_model_uses
from ddpfix.analysis.model_params import FORWARD, PARAMETERS, STATE_DICT, TRAINS

CASE = Path(__file__).parent / "golden" / "trainer_builds_optimizer"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    shutil.copy(CASE / "trainer.py", tmp_path / "trainer.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cls(source: str) -> ast.ClassDef:
    return ast.parse(textwrap.dedent(source)).body[0]  # type: ignore[return-value]


TRAINER = """\
    class Trainer:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.opt = torch.optim.SGD({over}, lr=0.1)

        def fit(self):
            for x, y in self.loader:
                self.opt.zero_grad()
                self.model(x).sum().backward()
                self.opt.step()
            torch.save(self.model.state_dict(), "m.pt")
    """


@pytest.mark.parametrize("over", ["model.parameters()", "self.model.parameters()"])
def test_what_the_class_does_with_the_model_it_keeps(over):
    uses = ast_kept_model_uses(_cls(TRAINER.format(over=over)))
    assert set(uses) == {"model"}
    assert uses["model"] >= {FORWARD, PARAMETERS, STATE_DICT, TRAINS}


def test_a_class_that_wraps_or_does_not_train_keeps_no_trained_model():
    wraps = TRAINER.format(over="model.parameters()").replace(
        "self.model = model", "self.model = DistributedDataParallel(model)"
    )
    assert ast_kept_model_uses(_cls(wraps)) == {}
    evaluates = TRAINER.format(over="model.parameters()").replace(".backward()", "").replace("self.opt.step()", "pass")
    assert ast_kept_model_uses(_cls(evaluates)) == {}
    own = TRAINER.format(over="[torch.zeros(1, requires_grad=True)]")  # an optimizer over something else
    assert ast_kept_model_uses(_cls(own)) == {}


def test_the_script_wraps_the_model_it_hands_over(project):
    result = ddpfix.fix_project("train.py")
    found = {d.code: d for d in result.diagnostics}
    assert all(d.applied for d in result.diagnostics) and result.incomplete == []
    assert {"DDP001", "DDP201", "DDP301", "DDP402", "DDP406"} <= set(found)
    code = result.code
    assert code.index("model = DDP(model") < code.index("Trainer(model, loader).fit(2)")
    [trainer] = result.others.values()
    assert "self.loader.sampler.set_epoch(epoch)" in trainer.code
    assert "self.opt = torch.optim.SGD(model.parameters(), lr=0.1)" in trainer.code  # over the wrapper's
    assert "DDP(" not in trainer.code


def test_every_fix_check_offers_is_made(project):
    """`check` offered DDP201 and DDP406 [*] here while `apply` changed nothing: each finding it calls
    fixable is now one the fix makes."""
    source = (project / "train.py").read_text()
    checked = ddpfix.check_source(source, path="train.py", cross_file=True)
    offered = [(d.code, d.line) for d in checked if d.fix != "none"]
    assert ("DDP201", 9) in offered and ("DDP301", 10) in offered
    fixed = ddpfix.fix_project("train.py")
    assert [(d.code, d.line) for d in fixed.diagnostics if d.applied] == offered
