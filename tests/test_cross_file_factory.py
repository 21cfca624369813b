"""Objects a config names by class (golden config_factory): `init_obj(module, config[...], ...)` of
utils.py returns `getattr(module, cfg["type"])(...)`, so the training loader and the trainer come from
classes chosen at run time. The script's model is still wrapped; what the chosen classes do (a
DataLoader subclass without a sampler, a BaseTrainer that saves and prints on every rank and saves the
wrapper's state_dict()) is reported at the factory calls with the modules' files and lines, and the
rewrite is incomplete there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ddpfix

CASE = Path(__file__).parent / "golden" / "config_factory"
GUARD = "if not dist.is_initialized() or dist.get_rank() == 0:"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copytree(CASE, tmp_path / "project", ignore=shutil.ignore_patterns("expected*", "__pycache__", "*.txt"))
    monkeypatch.chdir(tmp_path / "project")
    (tmp_path / "project" / "input.py").rename(tmp_path / "project" / "train.py")
    return tmp_path / "project"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _codes(result) -> dict[str, object]:
    return {d.code: d for d in result.diagnostics}


def test_the_factory_calls_are_reported_with_the_classes_files_and_lines(project):
    result = ddpfix.fix_project("train.py")
    found = _codes(result)
    assert found["DDP301"].applied and "model = DDP(model" in result.code
    loader = found["DDP201"]
    assert loader.fix == "none" and loader.line == 16
    assert "getattr at utils.py:6: RegressionDataLoader at data_loaders.py:6" in loader.message
    assert "torch.save on every rank (trainer/base.py:28)" in found["DDP401"].message
    assert "self.model.state_dict() at trainer/base.py:27" in found["DDP402"].message
    assert "print on every rank (trainer/base.py:22)" in found["DDP406"].message
    assert [(b.code, b.line) for b in result.incomplete] == [("DDP201", 16), ("DDP402", 19), ("DDP401", 19)]
    assert result.others == {}  # nothing in the modules is edited: the class is the config's choice


def test_a_validation_loader_handed_by_keyword_is_not_reported(project):
    _edit(project / "train.py", "data_loader=data_loader)", "valid_data_loader=data_loader)")
    _edit(
        project / "trainer" / "trainer.py",
        "def __init__(self, model, optimizer, data_loader, **kwargs):",
        "def __init__(self, model, optimizer, data_loader=None, valid_data_loader=None, **kwargs):",
    )
    assert "DDP201" not in _codes(ddpfix.fix_project("train.py"))


def test_a_trainer_that_guards_its_writes_and_unwraps_is_not_reported(project):
    base = project / "trainer" / "base.py"
    _edit(base, "import torch\n", "import torch\nimport torch.distributed as dist\n")
    _edit(base, '            print(f"epoch', f'            if {GUARD}\n                print(f"epoch')
    _edit(base, "        torch.save(state,", f"        if {GUARD}\n            torch.save(state,")
    _edit(
        base,
        '"state_dict": self.model.state_dict()',
        '"state_dict": getattr(self.model, "module", self.model).state_dict()',
    )
    found = _codes(ddpfix.fix_project("train.py"))
    assert not {"DDP401", "DDP402", "DDP406"} & set(found)
    assert found["DDP201"].fix == "none"


def test_a_factory_that_takes_the_class_itself_is_not_read_as_a_config_factory(project):
    (project / "utils.py").write_text(
        'def init_obj(module, cfg, *args, **kwargs):\n    return module(*args, **cfg["args"], **kwargs)\n'
    )
    found = _codes(ddpfix.fix_project("train.py"))
    assert not {"DDP201", "DDP401", "DDP402", "DDP406"} & set(found)


def test_every_data_loader_class_the_module_offers_is_named(project):
    text = (project / "data_loaders.py").read_text()
    (project / "data_loaders.py").write_text(
        text + "\n\nclass ShuffledLoader(RegressionDataLoader):\n    pass\n\n\nclass Unrelated:\n    pass\n"
    )
    message = _codes(ddpfix.fix_project("train.py"))["DDP201"].message
    assert "RegressionDataLoader at data_loaders.py:6, ShuffledLoader at data_loaders.py:16" in message
    assert "Unrelated" not in message
