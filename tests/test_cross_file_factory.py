"""Objects a config names by class (golden config_factory): `init_obj(module, config[...], ...)` of
utils.py returns `getattr(module, cfg["type"])(...)`, so the training loader and the trainer come from
classes chosen at run time. The script's model is wrapped, and every class the factory can pick that
needs it is edited (dual-mode): each DataLoader class of the module gets a DistributedSampler when
torch.distributed is initialized, each trainer class handed the loader sets its epoch where the
epoch and the loader meet, its saves and prints are guarded to rank 0 and its state_dict() unwrapped.
Where one class cannot be edited, the finding is reported with the modules' files and lines and no
class is edited for it."""

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


def test_every_class_the_factory_can_pick_is_converted(project):
    result = ddpfix.fix_project("train.py")
    found = _codes(result)
    assert found["DDP301"].applied and "model = DDP(model" in result.code
    loader = found["DDP201"]
    assert loader.applied and loader.line == 16
    assert "getattr at utils.py:6: config.json's RegressionDataLoader at data_loaders.py:6" in loader.message
    assert "(at data_loaders.py:13, trainer/trainer.py:12)" in loader.message
    assert "the trainer the config names (Trainer in config.json; getattr at utils.py:6)" in found["DDP401"].message
    assert "torch.save on every rank (trainer/base.py:28)" in found["DDP401"].message
    assert "self.model.state_dict() at trainer/base.py:27" in found["DDP402"].message
    assert "print on every rank (trainer/base.py:22)" in found["DDP406"].message
    assert all(found[c].applied for c in ("DDP401", "DDP402", "DDP406"))
    assert result.incomplete == []
    edited = {Path(p).as_posix(): c.code for p, c in result.others.items()}
    assert sorted(edited) == ["data_loaders.py", "trainer/base.py", "trainer/trainer.py"]
    assert "if dist.is_initialized() else None" in edited["data_loaders.py"]
    assert "shuffle=(sampler is None and shuffle), sampler=sampler)" in edited["data_loaders.py"]
    epoch = '    def _train_epoch(self, epoch):\n        if isinstance(getattr(self.data_loader, "sampler", None)'
    assert epoch in edited["trainer/trainer.py"]
    assert edited["trainer/base.py"].count(GUARD) == 2
    assert 'getattr(self.model, "module", self.model).state_dict()' in edited["trainer/base.py"]


def test_a_loader_class_the_fix_cannot_edit_leaves_every_class_as_it_is(project):
    text = (project / "data_loaders.py").read_text()
    (project / "data_loaders.py").write_text(
        text + "\n\nclass DictLoader(DataLoader):\n    def __init__(self, dataset, **kwargs):\n"
        "        super().__init__(dataset, **kwargs)\n"
    )
    result = ddpfix.fix_project("train.py")
    loader = _codes(result)["DDP201"]
    assert loader.fix == "none" and not loader.applied
    assert "DictLoader at data_loaders.py:16" in loader.message
    assert "does not: the loader of DictLoader (line 18) takes its arguments from a dict" in loader.message
    edited = {Path(p).as_posix() for p in result.others}
    assert edited == {"trainer/base.py"}  # neither the other loader class nor the trainer's set_epoch
    assert [(b.code, b.line) for b in result.incomplete] == [("DDP201", 16)]


def test_a_trainer_that_keeps_no_loader_of_its_own_is_reported(project):
    _edit(
        project / "trainer" / "trainer.py",
        "        self.data_loader = data_loader\n",
        "        self.loaders = [data_loader]\n",
    )
    _edit(project / "trainer" / "trainer.py", "in self.data_loader:", "in self.loaders[0]:")
    result = ddpfix.fix_project("train.py")
    loader = _codes(result)["DDP201"]
    assert loader.fix == "none" and "Trainer does not keep the loader as one attribute of its own" in loader.message
    assert "data_loaders.py" not in {Path(p).name for p in result.others}


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
    _edit(base, '            print(f"epoch', f'            {GUARD}\n                print(f"epoch')
    _edit(base, "        torch.save(state,", f"        {GUARD}\n            torch.save(state,")
    _edit(
        base,
        '"state_dict": self.model.state_dict()',
        '"state_dict": getattr(self.model, "module", self.model).state_dict()',
    )
    found = _codes(ddpfix.fix_project("train.py"))
    assert not {"DDP401", "DDP402", "DDP406"} & set(found)
    assert found["DDP201"].applied


def test_a_factory_that_takes_the_class_itself_is_not_read_as_a_config_factory(project):
    (project / "utils.py").write_text(
        'def init_obj(module, cfg, *args, **kwargs):\n    return module(*args, **cfg["args"], **kwargs)\n'
    )
    found = _codes(ddpfix.fix_project("train.py"))
    assert not {"DDP201", "DDP401", "DDP402", "DDP406"} & set(found)


def test_every_data_loader_class_the_module_offers_is_named_and_sharded(project):
    text = (project / "data_loaders.py").read_text()
    (project / "data_loaders.py").write_text(
        text + "\n\nclass ShuffledLoader(RegressionDataLoader):\n    pass\n\n\nclass Unrelated:\n    pass\n"
        "\n\nclass OrderedLoader(DataLoader):\n    def __init__(self, dataset, batch_size):\n"
        "        super().__init__(dataset, batch_size, False)\n"
    )
    result = ddpfix.fix_project("train.py")
    message = _codes(result)["DDP201"].message
    assert "RegressionDataLoader at data_loaders.py:6, OrderedLoader at data_loaders.py:24, ShuffledLoader" in message
    assert "Unrelated" not in message
    edited = next(c.code for p, c in result.others.items() if Path(p).name == "data_loaders.py")
    assert edited.count("if dist.is_initialized() else None") == 2  # RegressionDataLoader's and OrderedLoader's
    assert "DistributedSampler(dataset, shuffle=False) if dist.is_initialized() else None" in edited


def test_the_class_the_config_file_names_is_named_first_and_every_class_is_still_edited(project):
    text = (project / "data_loaders.py").read_text()
    (project / "data_loaders.py").write_text(
        text + "\n\nclass OrderedLoader(DataLoader):\n    def __init__(self, dataset, batch_size):\n"
        "        super().__init__(dataset, batch_size, False)\n"
    )
    _edit(project / "config.json", '"type": "RegressionDataLoader"', '"type": "OrderedLoader"')
    result = ddpfix.fix_project("train.py")
    message = _codes(result)["DDP201"].message
    assert "config.json's OrderedLoader at data_loaders.py:16, RegressionDataLoader at data_loaders.py:6" in message
    edited = next(c.code for p, c in result.others.items() if Path(p).name == "data_loaders.py")
    assert edited.count("if dist.is_initialized() else None") == 2
    (project / "config.json").unlink()  # no config file to read: no label, the same edits
    again = ddpfix.fix_project("train.py")
    assert "config.json" not in _codes(again)["DDP201"].message
    assert {p: c.code for p, c in again.others.items()} == {p: c.code for p, c in result.others.items()}


def test_a_second_trainer_class_of_the_package_gets_its_set_epoch(project):
    (project / "trainer" / "quiet.py").write_text(
        "from .base import BaseTrainer\n\n\nclass QuietTrainer(BaseTrainer):\n"
        "    def __init__(self, model, optimizer, data_loader, **kwargs):\n"
        "        super().__init__(model, optimizer, **kwargs)\n        self.loader = data_loader\n\n"
        "    def _train_epoch(self, epoch):\n        for x, y in self.loader:\n            pass\n        return {}\n"
    )
    _edit(
        project / "trainer" / "__init__.py",
        "from .trainer import Trainer\n",
        "from .quiet import QuietTrainer\nfrom .trainer import Trainer\n",
    )
    result = ddpfix.fix_project("train.py")
    assert _codes(result)["DDP201"].applied
    quiet = next(c.code for p, c in result.others.items() if Path(p).name == "quiet.py")
    assert "self.loader.sampler.set_epoch(epoch)" in quiet


def test_a_loader_handed_by_position_reaches_the_trainer_s_attribute(project):
    _edit(project / "train.py", "optimizer, data_loader=data_loader)", "optimizer, data_loader)")
    result = ddpfix.fix_project("train.py")
    assert _codes(result)["DDP201"].applied and result.incomplete == []
    trainer = result.others[str(Path("trainer") / "trainer.py")].code
    assert "self.data_loader.sampler.set_epoch(epoch)" in trainer


def test_a_trainer_that_runs_its_own_epoch_loop_gets_set_epoch_in_it(project):
    _edit(
        project / "trainer" / "trainer.py",
        "    def _train_epoch(self, epoch):\n        self.model.train()\n        last = 0.0\n"
        "        for x, y in self.data_loader:\n",
        "    def _train_epoch(self, epoch):\n        return self.fit()\n\n    def fit(self):\n"
        "        last = 0.0\n        for step in range(2):\n            for x, y in self.data_loader:\n",
    )
    _edit(
        project / "trainer" / "trainer.py",
        "            self.optimizer.zero_grad()",
        "                self.optimizer.zero_grad()",
    )
    for line in ("loss = F.mse", "loss.backward", "self.optimizer.step", "last = loss"):
        _edit(project / "trainer" / "trainer.py", f"            {line}", f"                {line}")
    result = ddpfix.fix_project("train.py")
    assert _codes(result)["DDP201"].applied
    trainer = result.others[str(Path("trainer") / "trainer.py")].code
    assert "for step in range(2):\n            if isinstance(getattr(self.data_loader" in trainer
    assert "self.data_loader.sampler.set_epoch(step)" in trainer
