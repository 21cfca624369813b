"""A class of the script's own modules that builds its training DataLoader itself, beside the models it
trains (golden solver_builds_own_loader: `Solver(config).train()`, with `self.train_loader =
DataLoader(...)` in `Solver.__init__` of solver.py). The script holds no loader: the sampler goes where
the class builds it and the epoch where its loop passes over it, both decided at run time, and only
together with the wrap of the class's models; where one of them cannot be made, nothing is converted
and the findings say why."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ddpfix
from ddpfix.analysis.class_loaders import own_loaders

CASE = Path(__file__).parent / "golden" / "solver_builds_own_loader"
TRAIN_LOADER = "        self.train_loader = DataLoader(synthetic(128, 0), batch_size=config.batch_size, shuffle=True)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "main.py")
    shutil.copy(CASE / "solver.py", tmp_path / "solver.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _found(result) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in result.diagnostics:
        out.setdefault(d.code, []).append(d)
    return out


def _not_converted(project: Path, result, why: str) -> None:
    found = _found(result)
    [wrap] = found["DDP301"]
    assert wrap.fix == "none" and why in wrap.message
    [sampler] = found["DDP201"]
    assert sampler.fix == "none" and why in sampler.message
    assert result.code == (project / "main.py").read_text() and not result.others
    assert {"DDP001", "DDP301"} <= {b.code for b in result.incomplete}


def test_the_training_loader_the_class_builds_is_found_and_the_validation_loader_is_not(project):
    [own] = own_loaders(project / "solver.py", "Solver")
    assert (own.reach, own.method, own.line) == ("self.train_loader", "train", 28)


def test_the_class_loader_is_sharded_where_it_is_built_and_its_epoch_set_in_the_loop(project):
    result = ddpfix.fix_project("main.py")
    [sampler] = _found(result)["DDP201"]
    assert sampler.applied and "solver.train() trains on a DataLoader Solver builds itself" in sampler.message
    assert (
        "(self.train_loader at solver.py:28)" in sampler.message and "(solver.py:28, solver.py:33)" in sampler.message
    )
    assert result.incomplete == []
    text = result.others["solver.py"].code
    assert "        sampler = DistributedSampler(dataset) if dist.is_initialized() else None\n" in text
    assert (
        "shuffle=(sampler is None), sampler=sampler)\n        self.val_loader = DataLoader(synthetic(32, 1), batch_size=16)\n"
        in text
    )
    assert text.count("set_epoch") == 1 and "self.train_loader.sampler.set_epoch(epoch)" in text
    assert "self.net = DDP(self.net" in text


def test_a_loader_passed_over_in_a_while_loop_counting_steps_gets_a_count_of_the_passes(project):
    _edit(
        project / "solver.py",
        "        for epoch in range(self.epochs):\n",
        "        epoch, step = 0, 0\n        while step < 20:\n",
    )
    _edit(
        project / "solver.py",
        "                self.optimizer.step()\n",
        "                self.optimizer.step()\n                step += 1\n",
    )
    result = ddpfix.fix_project("main.py")
    assert result.incomplete == []
    text = result.others["solver.py"].code
    assert "        epoch_2 = 0\n        while step < 20:\n            if isinstance(getattr(self.train_loader" in text
    assert "self.train_loader.sampler.set_epoch(epoch_2)" in text and "            epoch_2 += 1\n" in text


@pytest.mark.parametrize(
    ("new", "why"),
    [
        (
            "        self.train_loader = DataLoader(synthetic(128, 0), batch_size=config.batch_size, sampler=RandomSampler(range(128)))\n",
            "has a sampler of its own",
        ),
        ("        self.train_loader = DataLoader(**loader_args)\n", "takes its arguments from a dict"),
    ],
)
def test_a_class_loader_the_fix_cannot_shard_leaves_the_whole_script_alone(project, new, why):
    _edit(project / "solver.py", TRAIN_LOADER, "        loader_args = {}\n" + new)
    _not_converted(project, ddpfix.fix_project("main.py"), why)


def test_a_loader_built_anew_each_epoch_is_not_taken_for_the_class_loader(project):
    _edit(project / "solver.py", TRAIN_LOADER, "")
    _edit(
        project / "solver.py",
        "            self.net.train()\n",
        "            self.net.train()\n" + TRAIN_LOADER.replace("        self", "            self"),
    )
    assert own_loaders(project / "solver.py", "Solver") == []
    result = ddpfix.fix_project("main.py")
    [wrap] = _found(result)["DDP301"]
    assert "no DataLoader the script builds was found to reach its training" in wrap.message
    assert not result.others


def test_no_loader_is_sharded_when_the_wrap_is_not_fixed(project):
    result = ddpfix.fix_project("main.py", select=["DDP201", "DDP001"])
    assert not result.others and result.code == (project / "main.py").read_text()
    [sampler] = _found(result)["DDP201"]
    assert sampler.fix == "none" and "are not wrapped there (DDP301)" in sampler.message


def test_the_wrap_is_withheld_when_the_sampler_is_not_fixed(project):
    result = ddpfix.fix_project("main.py", select=["DDP301", "DDP001"])
    assert not result.others
    [wrap] = _found(result)["DDP301"]
    assert wrap.fix == "none" and "DDP201 is not fixed" in wrap.message


def test_check_on_the_output_is_silent(project):
    result = ddpfix.fix_project("main.py")
    (project / "main.py").write_text(result.code)
    (project / "solver.py").write_text(result.others["solver.py"].code)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []
    again = ddpfix.fix_project("main.py")
    assert again.code == result.code and not again.others
