"""DDP402 through an object that keeps the wrapper (golden trainer_kept_model): `trainer =
Trainer(model, optimizer)` keeps `self.model = model`, so `trainer.model.state_dict()` in the script is
the wrapper's ('module.' keys) and is saved through getattr(..., "module", ...)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ddpfix
from ddpfix.kept_state_dicts import kept_as

CASE = Path(__file__).parent / "golden" / "trainer_kept_model"
UNWRAPPED = 'torch.save(getattr(trainer.model, "module", trainer.model).state_dict(), "model.pt")'


@pytest.fixture
def project(tmp_path, monkeypatch):
    for name in ("input.py", "data.py", "trainer.py"):
        shutil.copy(CASE / name, tmp_path / ("train.py" if name == "input.py" else name))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_kept_as_reads_the_attribute_a_parameter_is_kept_as(project):
    assert kept_as(project / "trainer.py", "Trainer", 0) == {"model"}
    assert kept_as(project / "trainer.py", "Trainer", "optimizer") == {"optimizer"}
    assert kept_as(project / "trainer.py", "Trainer", 5) == set()
    assert kept_as(project / "trainer.py", "NoSuchClass", 0) == set()


def test_the_kept_wrapper_is_saved_through_the_plain_module(project):
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP402"]
    assert d.applied and "trainer keeps model as self.model" in d.message
    assert d.message.startswith("after the DDP wrap, trainer.model.state_dict() would save")
    assert UNWRAPPED in result.code and result.incomplete == []


def test_an_attribute_the_class_does_not_keep_the_wrapper_in_is_left_alone(project):
    _replace(
        project / "trainer.py", "        self.model = model\n", "        self.model = model\n        self.best = None\n"
    )
    _replace(project / "train.py", "trainer.model.state_dict()", "trainer.best.state_dict()")
    result = ddpfix.fix_project("train.py")
    assert [d for d in result.diagnostics if d.code == "DDP402"] == []


def test_an_object_handed_another_model_is_left_alone(project):
    _replace(
        project / "train.py",
        "    trainer = Trainer(model, optimizer)\n",
        "    trainer = Trainer(make_model(), optimizer)\n",
    )
    result = ddpfix.fix_project("train.py")
    assert 'torch.save(trainer.model.state_dict(), "model.pt")' in result.code
    assert [d for d in result.diagnostics if d.code == "DDP402"] == []
