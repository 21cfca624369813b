"""A Trainer class of the script's own modules (golden trainer_step_methods): its epoch method hands
each batch to a step method that calls backward(), and the loader comes from a factory of another
module. The loader is a training loader (DDP201 shards it in the factory, set_epoch goes into the
Trainer's epoch loop); a method that reads an attribute only the plain model has through the kept
wrapper (`self.model.sample(4)`) is reported at the constructor call: the class trains through the
wrapper, so it keeps it, and that read goes through the plain module
in the class (`getattr(self.model, "module", self.model).sample(4)`); where the class also uses the
wrapper in a way it does not serve (`self.model.to(...)`), the rewrite is incomplete there (invariant 2)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ddpfix
from ddpfix.analysis.imports import find_module
from ddpfix.analysis.loader_params import EPOCHS, TRAINS_ON
from ddpfix.analysis.summaries import summarise

CASE = Path(__file__).parent / "golden" / "trainer_step_methods"
SAMPLE = "    def sample(self, n):\n        return self.model.sample(n)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    for name in ("data.py", "trainer.py"):
        shutil.copy(CASE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_a_loop_that_trains_through_a_method_trains_on_its_loader(project):
    summary = summarise(project / "trainer.py", lambda module, level: find_module(project, module))
    assert TRAINS_ON in summary.param_uses["Trainer._epoch"]["loader"]
    assert {TRAINS_ON, EPOCHS} <= summary.param_uses["Trainer.fit"]["loader"]


def test_a_loop_that_calls_no_training_method_does_not(project):
    text = (project / "trainer.py").read_text().replace("        loss.backward()\n", "")
    (project / "trainer.py").write_text(text.replace("        self.optimizer.step()\n", ""))
    summary = summarise(project / "trainer.py", lambda module, level: find_module(project, module))
    assert TRAINS_ON not in summary.param_uses["Trainer._epoch"].get("loader", set())


def test_the_loader_is_sharded_in_its_factory_and_reshuffled_in_the_trainer(project):
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP201"]
    assert d.applied and "built by build_loaders() at data.py:12" in d.message
    edited = {Path(p).name: c.data.decode() for p, c in result.others.items()}
    assert "sampler=train_sampler" in edited["data.py"]
    assert "                loader.sampler.set_epoch(epoch)\n" in edited["trainer.py"]
    assert result.incomplete == []


def test_a_custom_attribute_read_through_the_kept_wrapper_goes_through_the_plain_module(project):
    _append(project / "trainer.py", "\n" + SAMPLE)
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP308"]
    assert d.applied and d.line == 14  # trainer = Trainer(model, optimizer)
    assert 'the fix reads them through getattr(..., "module", ...) there (self.model.sample at trainer.py:' in d.message
    assert "trainer = Trainer(model, optimizer)\n" in result.code  # the class keeps the wrapper for its forward
    trainer = next(c.data.decode() for p, c in result.others.items() if Path(p).name == "trainer.py")
    assert '        return getattr(self.model, "module", self.model).sample(n)\n' in trainer
    assert result.incomplete == []


def test_the_kept_wrapper_printed_by_the_class_is_printed_as_the_plain_model(project):
    """`print(self.model)` in the class: routed like the custom read (the plain run prints the model), so it
    does not keep the fix of `self.model.sample(n)` from being made."""
    _append(project / "trainer.py", "\n" + SAMPLE + "\n    def show(self):\n        print(self.model)\n")
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP308"]
    assert d.applied and "self.model at trainer.py:" in d.message and "self.model.sample at trainer.py:" in d.message
    trainer = next(c.data.decode() for p, c in result.others.items() if Path(p).name == "trainer.py")
    assert '        print(getattr(self.model, "module", self.model))\n' in trainer
    assert result.incomplete == []


def test_a_kept_wrapper_the_class_moves_is_incomplete(project):
    """`self.model.to(...)` after the wrap is not served by the wrapper as by the model: no routing, and
    the rewrite says what is left and where."""
    _append(project / "trainer.py", "\n" + SAMPLE + '\n    def to_cpu(self):\n        self.model.to("cpu")\n')
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP308"]
    assert d.fix == "none" and d.line == 14
    assert "keep handing it the wrapper" in d.message and "getattr(m, 'module', m)" in d.message
    assert d.message.endswith("the fix does not: self.model.to (trainer.py:" + d.message.rsplit("trainer.py:", 1)[1])
    assert "is not served by the DDP wrapper as by the model" in d.message
    trainer = next((c.data.decode() for p, c in result.others.items() if Path(p).name == "trainer.py"), "")
    assert "getattr(self.model" not in trainer
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP308", 2)]


def test_a_method_of_the_model_called_in_the_training_step_is_incomplete(project):
    """`self.model.score(xb)` before the step's backward: on the plain module, a forward the wrapper
    would not see (its gradients would not be averaged); not routed, and said so."""
    text = (project / "trainer.py").read_text()
    (project / "trainer.py").write_text(
        text.replace(
            "loss = F.mse_loss(self.model(xb), yb)", "loss = F.mse_loss(self.model(xb), yb) + self.model.score(xb)"
        )
    )
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP308"]
    assert d.fix == "none" and "self.model.score(...) (trainer.py:13) runs in the training step" in d.message
    assert [(b.code, b.invariant.number) for b in result.incomplete] == [("DDP308", 2)]


def test_a_class_that_reads_only_the_module_api_is_not_reported(project):
    _append(project / "trainer.py", "\n    def mode(self):\n        return self.model.training\n")
    result = ddpfix.fix_project("train.py")
    assert [d for d in result.diagnostics if d.code == "DDP308"] == [] and result.incomplete == []


SAVE_STEPS = "        np.save({}, np.array([self.steps]))\n"


def _saves_steps(project: Path, path: str) -> str:
    """fit() ends with `np.save(<path>, ...)`; the line it adds."""
    text = (project / "trainer.py").read_text()
    text = text.replace("import torch.nn.functional as F\n", "import numpy as np\nimport torch.nn.functional as F\n")
    (project / "trainer.py").write_text(text + SAVE_STEPS.format(path))
    return SAVE_STEPS.format(path)


def test_another_writer_in_a_trainer_method_is_guarded_there(project):
    """Not only torch.save: every writer DDP401 knows (np.save here) that a method of the module runs
    on every rank is reported at the script's call and guarded to rank 0 in the module."""
    line = _saves_steps(project, '"steps.npy"')
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP401" and "trainer.fit()" in d.message]
    assert d.applied and "runs numpy.save on every rank (trainer.py:" in d.message
    trainer = next(c.data.decode() for p, c in result.others.items() if Path(p).name == "trainer.py")
    assert "        if not dist.is_initialized() or dist.get_rank() == 0:\n    " + line in trainer
    assert result.incomplete == []


def test_a_writer_of_one_file_per_rank_is_left_alone(project):
    _saves_steps(project, 'f"steps_rank{self.rank}.npy"')
    result = ddpfix.fix_project("train.py")
    assert [d for d in result.diagnostics if d.code == "DDP401" and "trainer.fit()" in d.message] == []
