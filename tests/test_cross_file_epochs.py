"""Fixes across files in a trainer class that runs its own epochs over the loader it is handed and
keeps its own writer and log file (golden trainer_owns_epochs): set_epoch at the start of its epoch
loop (DDP201, DDP204), the tracker and its uses (DDP407) and the log file (DDP405) rank-0 only, all
dual-mode: the module keeps working for a plain run and for other callers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ddpfix

CASE = Path(__file__).parent / "golden" / "trainer_owns_epochs"
GUARD = "if not dist.is_initialized() or dist.get_rank() == 0:"
SET_EPOCH = (
    '            if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):\n'
    "                train_loader.sampler.set_epoch(epoch)\n"
)
WRITER = "self.writer = SummaryWriter(out) if not dist.is_initialized() or dist.get_rank() == 0 else None"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    for name in ("learner.py", "helpers.py"):
        shutil.copy(CASE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _messages(result) -> dict[str, str]:
    """Each code's messages, one a line."""
    out: dict[str, str] = {}
    for d in result.diagnostics:
        out[d.code] = f"{out[d.code]}\n{d.message}" if d.code in out else d.message
    return out


def test_the_trainer_module_gets_set_epoch_and_its_writes_guarded(project):
    result = ddpfix.fix_project("train.py")
    assert sorted(result.others) == ["helpers.py", "learner.py"]
    for name, change in result.others.items():
        assert change.data == (CASE / "expected" / name).read_bytes(), name
    assert result.others["learner.py"].codes == ["DDP201", "DDP402", "DDP405", "DDP407"]
    assert result.code == (CASE / "expected.py").read_text() and result.incomplete == []
    messages = _messages(result)
    assert "Learner.train() in learner.py runs the epochs over it: the fix also sets" in messages["DDP201"]
    assert messages["DDP201"].endswith("(learner.py:36)")  # the epoch loop
    assert "Learner() opens a file for writing on every rank (learner.py:31)" in messages["DDP405"]
    assert "Learner() creates an experiment tracker on every rank (learner.py:30)" in messages["DDP407"]
    assert "DDP204" not in messages  # DDP201's fix sets the epoch there: nothing left to report


def test_a_sampler_the_script_has_already_gets_its_set_epoch_in_the_module(project):
    """The script shards the data itself; only the module's epoch loop lacks set_epoch (DDP204)."""
    (project / "train.py").write_text((CASE / "expected.py").read_text())
    result = ddpfix.fix_project("train.py", select=["DDP204"])
    [d] = result.diagnostics
    assert d.code == "DDP204" and d.applied
    assert "Learner.train() in learner.py runs the epochs over train_loader: the fix sets" in d.message
    assert SET_EPOCH in result.others["learner.py"].code and result.code == (CASE / "expected.py").read_text()


HELPER_LOOP = """
import torch.nn as nn


class Learner:
    def __init__(self, model, optimizer, scheduler, epochs):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.epochs = epochs

    def train(self, train_loader):
        for epoch in range(self.epochs):
            self.steps = len(train_loader)
            self.train_epoch(train_loader)
            self.scheduler.step()

    def train_epoch(self, loader):
        for x, y in loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


def test_the_epochs_in_a_helper_call_get_set_epoch_in_the_loop_that_calls_it(project):
    (project / "learner.py").write_text(HELPER_LOOP)
    result = ddpfix.fix_project("train.py")
    edited = result.others["learner.py"].code
    assert SET_EPOCH + "            self.steps = len(train_loader)\n" in edited  # `len(...)` is no pass over it
    assert edited.count("set_epoch") == 1


def test_an_epoch_loop_with_no_epoch_variable_is_reported_with_why(project):
    text = (project / "learner.py").read_text()
    text = text.replace("for epoch in range(self.epochs):", "for _ in range(self.epochs):")
    (project / "learner.py").write_text(text.replace('f"epoch {epoch}:', 'f"epoch {_}:'))
    result = ddpfix.fix_project("train.py")
    found = {d.code: d for d in result.diagnostics}
    why = "the epoch loop of Learner.train() (line 36) has no epoch variable to pass"
    assert f"(the fix cannot edit that file: {why})" in found["DDP201"].message and found["DDP201"].applied
    assert found["DDP407"].applied and "set_epoch" not in result.others["learner.py"].code
    assert [i.code for i in result.incomplete] == ["DDP204"]


def test_without_cross_file_edits_each_finding_says_so(project):
    result = ddpfix.fix_project("train.py", cross_file=False)
    why = "cross-file edits are off"
    # save_config's own file (helpers.py:14, a `with open(...)`): reported, never fixed
    found = {d.code: d for d in result.diagnostics if "helpers.py:14" not in d.message}
    assert "learner.py" not in result.others
    assert f"(the fix cannot edit that file: {why})" in found["DDP201"].message and found["DDP201"].applied
    for code in ("DDP405", "DDP407"):
        assert found[code].fix == "none" and why in found[code].message
    assert {i.code for i in result.incomplete} >= {"DDP204", "DDP405", "DDP407"}


def test_a_tracker_use_that_binds_a_name_leaves_the_tracker_alone_and_says_where(project):
    text = (project / "learner.py").read_text()
    text = text.replace(
        '            os.path.join(self.writer.log_dir, "checkpoint.pt"),\n', "            checkpoint,\n"
    ).replace(
        "        save_checkpoint(\n",
        '        checkpoint = os.path.join(self.writer.log_dir, "checkpoint.pt")\n        save_checkpoint(\n',
    )
    (project / "learner.py").write_text(text)
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP407"]
    assert d.fix == "none" and "a use of self.writer cannot be guarded on its own (learner.py:46)" in d.message
    edited = result.others["learner.py"].code
    assert "SummaryWriter(out)\n" in edited and SET_EPOCH in edited  # the other fixes still edit the module
    # the writer stays on every rank; save_config's file under its log_dir is still written by rank 0 only
    assert sorted(i.code for i in result.incomplete) == ["DDP407"]
    assert (
        "    if not dist.is_initialized() or dist.get_rank() == 0:\n        with open("
        in result.others["helpers.py"].code
    )


def test_the_edited_module_still_runs_plain_for_another_caller(project):
    """Without a process group and with a list for a loader (another entry point), the edited module
    trains, logs and saves as before: the guards hold in a plain run, the set_epoch test skips."""
    result = ddpfix.fix_project("train.py")
    for name, change in result.others.items():
        (project / name).write_bytes(change.data)
    code = (
        "import torch, torch.nn as nn\n"
        "from learner import Learner\n"
        "model = nn.Linear(4, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "sched = torch.optim.lr_scheduler.StepLR(opt, 1)\n"
        "batches = [(torch.randn(8, 4), torch.randn(8, 1)) for _ in range(3)]\n"
        "Learner(model, opt, sched, 2, out='runs/other').train(batches)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in (project / "runs" / "other").iterdir())
    assert written == ["checkpoint.pt", "config.json", "scalars.txt", "training.log"]
    assert "epoch 1: loss" in (project / "runs" / "other" / "training.log").read_text()


def test_a_second_fix_changes_nothing(project):
    result = ddpfix.fix_project("train.py")
    (project / "train.py").write_text(result.code)
    for name, change in result.others.items():
        (project / name).write_bytes(change.data)
    again = ddpfix.fix_project("train.py")
    assert again.others == {} and again.code == result.code
    assert [d.code for d in again.diagnostics] == []


@pytest.mark.parametrize("kept", ["kwargs['model'].to('cpu')", "kwargs['model']", "kwargs.get('model')"])
def test_a_model_kept_from_kwargs_is_saved_unwrapped(project, kept):
    """`def __init__(self, *args, **kwargs): self.model = kwargs['model'].to(device)`, as keyword calls
    hand it (`Learner(model=model, ...)`): the wrapper's state_dict is saved with the plain keys."""
    text = (project / "learner.py").read_text()
    text = text.replace(
        'def __init__(self, model, optimizer, scheduler, epochs, out="runs/learner"):',
        "def __init__(self, *args, **kwargs):",
    )
    text = text.replace("        self.model = model\n", f"        self.model = {kept}\n")
    for attr in ("optimizer", "scheduler", "epochs"):
        text = text.replace(f"self.{attr} = {attr}\n", f"self.{attr} = kwargs['{attr}']\n")
    (project / "learner.py").write_text(text.replace("SummaryWriter(out)", 'SummaryWriter("runs/learner")'))
    result = ddpfix.fix_project("train.py")
    unwrapped = 'getattr(self.model, "module", self.model).state_dict()' in result.others["learner.py"].code
    assert unwrapped == (kept != "kwargs.get('model')")  # `.get()` may hand back a default: not followed
    assert ("DDP402" in _messages(result)) == unwrapped


STORED = """
import torch.nn as nn


class Learner:
    def __init__(self, model, optimizer, train_loader, epochs):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader
        self.epochs = epochs

    def fit(self):
        for epoch in range(self.epochs):
            self.train_epoch()

    def train_epoch(self):
        for x, y in self.train_loader:
            loss = nn.functional.mse_loss(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
"""


@pytest.mark.parametrize("shape", ["in fit", "in a helper fit calls"])
def test_a_loader_the_class_keeps_gets_set_epoch_through_its_attribute(project, shape):
    """`Learner(model, optimizer, train_loader, epochs=3).fit()`: the class stores the loader and
    iterates `self.train_loader` per epoch."""
    module = STORED
    if shape == "in fit":
        start = module.index("            self.train_epoch()\n")
        body = module[module.index("        for x, y in self.train_loader:") :]
        module = module[:start] + "\n".join("    " + line if line else line for line in body.split("\n"))
    (project / "learner.py").write_text(module)
    script = (project / "train.py").read_text()
    script = script.replace(
        "    learner = Learner(model=model, optimizer=optimizer, scheduler=scheduler, epochs=3)\n"
        "    learner.train(train_loader)\n",
        "    Learner(model, optimizer, train_loader, epochs=3).fit()\n",
    )
    (project / "train.py").write_text(script)
    result = ddpfix.fix_project("train.py")
    messages = _messages(result)
    assert "the Learner class of learner.py runs the epochs over it: the fix also sets" in messages["DDP201"]
    edited = result.others["learner.py"].code
    call = (
        '            if isinstance(getattr(self.train_loader, "sampler", None), DistributedSampler):\n'
        "                self.train_loader.sampler.set_epoch(epoch)\n"
    )
    after = "            for x, y in self.train_loader:\n" if shape == "in fit" else "            self.train_epoch()\n"
    assert call + after in edited and edited.count("set_epoch") == 1
    assert result.incomplete == []
    (project / "learner.py").write_text(edited)  # a second fix finds the call there
    (project / "train.py").write_text(result.code)
    assert ddpfix.fix_project("train.py").others == {}


def test_a_copy_of_the_saved_checkpoint_is_guarded_with_the_save(project):
    """`save_checkpoint(state, filename, is_best)` ending in `if is_best: shutil.copyfile(filename, ...)`:
    every rank would copy a file rank 0 may still be writing; the copy joins the save's guard."""
    text = (project / "helpers.py").read_text().replace("import json\n", "import json\nimport shutil\n")
    text = text.replace(
        "def save_checkpoint(state, filename):\n    torch.save(state, filename)\n",
        "def save_checkpoint(state, filename, is_best=True):\n    torch.save(state, filename)\n"
        "    if is_best:\n        shutil.copyfile(filename, filename + '.best')\n",
    )
    (project / "helpers.py").write_text(text)
    result = ddpfix.fix_project("train.py")
    edited = result.others["helpers.py"].code
    assert (
        f"    {GUARD}\n        torch.save(state, filename)\n"
        "        if is_best:\n            shutil.copyfile(filename, filename + '.best')\n"
    ) in edited
