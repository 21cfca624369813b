"""A model the script hands to a class of its own modules that moves it to its device after keeping it
(goldens trainer_moves_handed_model and trainer_moves_model_in_init): the wrap goes in that class, right
after the move, decided at run time; the script keeps the plain module. Where the class cannot hold the
wrapper as the model, nothing is converted and the findings say why."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_files import by_code, edit, golden_project

import ddpfix

GOLDEN = Path(__file__).parent / "golden"
IN_INIT = GOLDEN / "trainer_moves_model_in_init"
ALIASED = GOLDEN / "trainer_moves_handed_model"


@pytest.fixture
def in_init(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(IN_INIT, tmp_path, "trainer.py")


@pytest.fixture
def aliased(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(ALIASED, tmp_path, "trainer.py", "model.py")


def _not_converted(result, folder: Path, why: str) -> None:
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.fix == "none" and why in wrap.message
    assert all(d.fix == "none" for code in ("DDP001", "DDP201") for d in found[code])
    assert result.code == (folder / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP201", "DDP301"} <= {b.code for b in result.incomplete}


def test_the_class_wraps_the_model_right_after_its_move_and_before_its_optimizer(in_init):
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]  # (the class keeps the moved model as one it builds: module_wraps.py)
    assert wrap.applied and "the fix wraps each there, after it is built and before its optimizer" in wrap.message
    assert "DDP(" not in result.code
    trainer = result.others["trainer.py"].code
    assert (
        "        self.model = model.to(self.device)\n"
        "        if dist.is_initialized():\n"
        '            self.model = DDP(self.model, device_ids=[torch.cuda.current_device()] if self.device.type == "cuda" '
        "else None)\n"
        "        self.loader = loader\n"
        "        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)\n"
    ) in trainer
    assert not result.incomplete


def test_a_use_routed_inside_an_fstring_takes_the_other_quotes(in_init):
    """Before Python 3.12 an f-string's expressions cannot reuse its quotes: the routed read of the
    model's own attribute inside `f"..."` is spelled with single quotes (else the edit would not parse)."""
    trainer = ddpfix.fix_project("main.py").others["trainer.py"].code
    assert "over {getattr(self.model, 'module', self.model).num_classes} classes\")" in trainer
    assert 'torch.save(getattr(self.model, "module", self.model).state_dict(), self.ckpt)' in trainer


def test_a_local_name_for_the_model_is_routed_where_the_wrapper_lacks_the_method(aliased):
    """`model, config = self.model, self.config`, then `model.configure_optimizers(config)`: the method
    is the model's own, read through the plain module; its calls (`model(x)`) and nn.Module methods
    the wrapper serves (`model.train()`, `model.zero_grad()`) stay as they are."""
    trainer = ddpfix.fix_project("main.py").others["trainer.py"].code
    assert 'self.optimizer = getattr(model, "module", model).configure_optimizers(config)' in trainer
    assert "        model.train()\n" in trainer and "model(x)" in trainer


def test_a_local_name_bound_again_is_not_followed(aliased):
    """`model` bound twice in `run()`: what it holds at each use is not one thing, so the class's training
    is not traced to the script's model, and nothing is converted."""
    edit(aliased / "trainer.py", "        model.train()\n", "        model = model.train()\n")
    _not_converted(ddpfix.fix_project("main.py"), aliased, "trains a model the script never holds")


def test_the_class_moving_the_model_under_an_if_is_wrapped_after_it(aliased):
    edit(
        aliased / "trainer.py",
        "        self.model = self.model.to(self.device)\n",
        "        if torch.cuda.is_available():\n            self.model = self.model.to(self.device)\n",
    )
    result = ddpfix.fix_project("main.py")
    assert by_code(result)["DDP301"][0].applied
    trainer = result.others["trainer.py"].code
    assert "            self.model = self.model.to(self.device)\n        if dist.is_initialized():\n" in trainer


def test_a_move_in_another_method_is_not_converted(aliased):
    """`self.model.to(self.device)` in run(), after the wrap: the wrapper is not the model to move."""
    edit(
        aliased / "trainer.py", "        model.train()\n", "        self.model.to(self.device)\n        model.train()\n"
    )
    _not_converted(ddpfix.fix_project("main.py"), aliased, "self.model is bound or moved outside Trainer.__init__")


def test_the_script_reading_the_model_back_through_the_object_is_not_converted(in_init):
    edit(in_init / "main.py", "    trainer.fit(epochs=3)\n", "    trainer.fit(epochs=3)\n    print(trainer.model)\n")
    _not_converted(ddpfix.fix_project("main.py"), in_init, "the script reads trainer.model at line 29")


def test_the_script_reading_the_handed_model_back_is_not_converted(aliased):
    edit(
        aliased / "main.py",
        "Trainer(config, model, TensorDataset(x, y)).run()\n",
        "trainer = Trainer(config, model, TensorDataset(x, y))\ntrainer.run()\nprint(trainer.model)\n",
    )
    _not_converted(ddpfix.fix_project("main.py"), aliased, "the script reads trainer.model at line 16")


def test_the_plain_module_called_after_the_wrap_is_not_converted(aliased):
    """A forward through the constructor's parameter after the move would bypass the wrapper."""
    edit(
        aliased / "trainer.py",
        "        self.iter_num = 0\n",
        "        self.iter_num = 0\n        model(torch.zeros(1, 10))\n",
    )
    _not_converted(ddpfix.fix_project("main.py"), aliased, "model is read at trainer.py:16 after the wrap")


def test_reading_the_plain_modules_attributes_after_the_wrap_is_kept(aliased):
    edit(
        aliased / "trainer.py",
        "        self.iter_num = 0\n",
        "        self.iter_num = 0\n        self.width = model.net\n",
    )
    result = ddpfix.fix_project("main.py")
    assert by_code(result)["DDP301"][0].applied and "self.width = model.net" in result.others["trainer.py"].code


def test_a_model_bound_again_in_another_method_is_not_converted(aliased):
    edit(
        aliased / "trainer.py",
        "        model.train()\n",
        "        self.model = self.model.train()\n        model.train()\n",
    )
    _not_converted(ddpfix.fix_project("main.py"), aliased, "self.model is bound or moved outside Trainer.__init__")


def test_without_the_wrap_fix_nothing_is_distributed(aliased):
    result = ddpfix.fix_project("main.py", select=["DDP001", "DDP201"])
    [group] = by_code(result)["DDP001"]
    assert group.fix == "none" and "DDP301 is not fixed" in group.message
    assert result.code == (aliased / "main.py").read_text() and not result.others


def test_the_output_checks_clean_and_a_second_apply_changes_nothing(aliased):
    result = ddpfix.fix_project("main.py")
    (aliased / "main.py").write_text(result.code)
    for path, change in result.others.items():
        Path(path).write_text(change.code)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []
    again = ddpfix.fix_project("main.py")
    assert again.code == result.code and not again.others
