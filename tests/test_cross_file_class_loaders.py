"""A class of the script's own modules that builds its training DataLoader itself, beside the models it
trains (golden solver_builds_own_loader: `Solver(config).train()`, with `self.train_loader =
DataLoader(...)` in `Solver.__init__` of solver.py). The script holds no loader: the sampler goes where
the class builds it and the epoch where its loop passes over it, both decided at run time, and only
together with the wrap of the class's models; where one of them cannot be made, nothing is converted
and the findings say why."""

from __future__ import annotations

from pathlib import Path

import pytest
from local_files import by_code, edit, golden_project

import ddpfix
from ddpfix.analysis.class_loaders import own_loaders

CASE = Path(__file__).parent / "golden" / "solver_builds_own_loader"
TRAIN_LOADER = "        self.train_loader = DataLoader(synthetic(128, 0), batch_size=config.batch_size, shuffle=True)\n"


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(CASE, tmp_path, "solver.py")


def _not_converted(project: Path, result, why: str) -> None:
    found = by_code(result)
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
    [sampler] = by_code(result)["DDP201"]
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
    edit(
        project / "solver.py",
        "        for epoch in range(self.epochs):\n",
        "        epoch, step = 0, 0\n        while step < 20:\n",
    )
    edit(
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
    edit(project / "solver.py", TRAIN_LOADER, "        loader_args = {}\n" + new)
    _not_converted(project, ddpfix.fix_project("main.py"), why)


def test_a_loader_built_anew_each_epoch_is_not_taken_for_the_class_loader(project):
    edit(project / "solver.py", TRAIN_LOADER, "")
    edit(
        project / "solver.py",
        "            self.net.train()\n",
        "            self.net.train()\n" + TRAIN_LOADER.replace("        self", "            self"),
    )
    assert own_loaders(project / "solver.py", "Solver") == []
    result = ddpfix.fix_project("main.py")
    [wrap] = by_code(result)["DDP301"]
    assert "no DataLoader the script builds was found to reach its training" in wrap.message
    assert not result.others


def test_no_loader_is_sharded_when_the_wrap_is_not_fixed(project):
    result = ddpfix.fix_project("main.py", select=["DDP201", "DDP001"])
    assert not result.others and result.code == (project / "main.py").read_text()
    [sampler] = by_code(result)["DDP201"]
    assert sampler.fix == "none" and "are not wrapped there (DDP301)" in sampler.message


def test_the_wrap_is_withheld_when_the_sampler_is_not_fixed(project):
    result = ddpfix.fix_project("main.py", select=["DDP301", "DDP001"])
    assert not result.others
    [wrap] = by_code(result)["DDP301"]
    assert wrap.fix == "none" and "DDP201 is not fixed" in wrap.message


def test_check_on_the_output_is_silent(project):
    result = ddpfix.fix_project("main.py")
    (project / "main.py").write_text(result.code)
    (project / "solver.py").write_text(result.others["solver.py"].code)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []
    again = ddpfix.fix_project("main.py")
    assert again.code == result.code and not again.others


# --------------------------------------------------------------------------- a class handed the model
# golden trainer_builds_own_loader: `Trainer(model, dataset, config).train()`, the loader built in
# `Trainer.train`, the model read there through `model, config = self.model, self.config`

HANDED = Path(__file__).parent / "golden" / "trainer_builds_own_loader"


@pytest.fixture
def handed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(HANDED, tmp_path, "trainer.py")


def test_the_loader_of_a_class_handed_the_model_is_sharded_there_and_the_script_wraps(handed):
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [sampler] = found["DDP201"]
    assert (
        sampler.applied
        and "trainer.train() trains on a DataLoader Trainer builds itself (loader at trainer.py:39)" in sampler.message
    )
    [wrap] = found["DDP301"]
    assert wrap.applied and "model = DDP(model" in result.code
    assert result.incomplete == []
    text = result.others["trainer.py"].code
    assert "        sampler = DistributedSampler(self.train_dataset) if dist.is_initialized() else None\n" in text
    assert (
        '            if isinstance(getattr(loader, "sampler", None), DistributedSampler):\n                loader.sampler.set_epoch(epoch)\n'
        in text
    )


def test_a_save_through_a_local_name_for_the_kept_model_saves_the_plain_module(handed):
    result = ddpfix.fix_project("main.py")
    [unwrap] = by_code(result)["DDP402"]
    assert unwrap.applied and "trainer.py:34" in unwrap.message
    assert (
        'torch.save(getattr(model, "module", model).state_dict(), self.config.ckpt_path)'
        in result.others["trainer.py"].code
    )


def test_a_local_name_bound_twice_is_no_name_for_the_kept_model(handed):
    edit(
        handed / "trainer.py",
        "        model = self.model\n",
        "        model = self.model\n        model = model.cpu()\n",
    )
    result = ddpfix.fix_project("main.py")
    assert "torch.save(model.state_dict(), self.config.ckpt_path)" in result.others["trainer.py"].code


def test_the_class_loader_is_left_alone_when_the_script_does_not_wrap(handed):
    result = ddpfix.fix_project("main.py", select=["DDP201", "DDP001"])
    [sampler] = by_code(result)["DDP201"]
    assert sampler.fix == "none" and "DDP301 is not fixed" in sampler.message
    assert not result.others


def test_the_model_is_traced_through_a_tuple_of_names_to_its_optimizer(handed):
    """`model, config = self.model, self.config`, then `AdamW(model.parameters())`: the class trains the
    model the script hands it (before, the script was said to train a model it never holds)."""
    import ast

    from ddpfix.analysis.ast_reading import ast_aliases
    from ddpfix.analysis.kept_models import ast_kept_model_uses

    tree = ast.parse((handed / "trainer.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer")
    train = next(m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "train")
    assert ast_aliases(train, {"self.model", "self.config"}) == {"model": "self.model", "config": "self.config"}
    uses = ast_kept_model_uses(cls)
    assert {"parameters", "trains", "forward"} <= uses["model"]


# --------------------------------------------------------------------------- batches drawn with next()
# golden trainer_stream_with_replacement: `RandomSampler(ds, replacement=True, num_samples=int(1e10))`
# in `Trainer.run`, batches drawn with next() from `iter(train_loader)`, remade when it runs out

STREAM = Path(__file__).parent / "golden" / "trainer_stream_with_replacement"
REPLACEMENT = "            sampler=RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10)),\n            shuffle=False,\n"


@pytest.fixture
def stream(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return golden_project(STREAM, tmp_path, "trainer.py")


def test_a_stream_drawn_with_replacement_gets_a_generator_seeded_per_rank(stream):
    [own] = own_loaders(stream / "trainer.py", "Trainer")
    assert own.stream and own.method == "run"
    result = ddpfix.fix_project("main.py")
    [sampler] = by_code(result)["DDP201"]
    assert sampler.applied and "draws with replacement, the same samples on every rank" in sampler.message
    text = result.others["trainer.py"].code
    generator = "generator=torch.Generator().manual_seed(torch.initial_seed() + dist.get_rank()) if dist.is_initialized() else None)"
    assert generator in text
    assert "set_epoch" not in text and "DistributedSampler" not in text  # an endless stream has no epochs
    assert result.incomplete == []
    (stream / "main.py").write_text(result.code)
    (stream / "trainer.py").write_text(text)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []


def test_a_shuffled_loader_drawn_with_next_gets_a_count_of_its_passes(stream):
    edit(stream / "trainer.py", REPLACEMENT, "            shuffle=True,\n")
    result = ddpfix.fix_project("main.py")
    assert result.incomplete == []
    text = result.others["trainer.py"].code
    assert "sampler = DistributedSampler(self.train_dataset) if dist.is_initialized() else None\n" in text
    assert (
        '        epoch = 0\n        if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):\n'
        in text
    )
    assert "                epoch += 1\n                if isinstance(getattr(train_loader" in text


def test_a_stream_with_a_generator_seeded_per_rank_is_left_alone_and_one_alike_on_every_rank_is_reported(stream):
    per_rank = "generator=torch.Generator().manual_seed(dist.get_rank()))"
    edit(stream / "trainer.py", "num_samples=int(1e10))", "num_samples=int(1e10), " + per_rank)
    assert own_loaders(stream / "trainer.py", "Trainer") == []
    edit(stream / "trainer.py", per_rank, "generator=torch.Generator().manual_seed(0))")
    result = ddpfix.fix_project("main.py")
    [sampler] = by_code(result)["DDP201"]
    assert sampler.fix == "none" and "has a sampler of its own" in sampler.message
    assert "data not sharded" in result.incomplete[0].format()


# --------------------------------------------------------------------------- a loader built by a helper
HELPER = """\
from torch.utils.data import DataLoader{extra}


def build_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, {args})
"""


def _helper_built(handed: Path, args: str = "shuffle=True", extra: str = "") -> None:
    (handed / "data.py").write_text(HELPER.format(args=args, extra=extra))
    edit(handed / "trainer.py", "from torch.utils.data import DataLoader\n", "from data import build_loader\n")
    edit(
        handed / "trainer.py",
        "        loader = DataLoader(self.train_dataset, shuffle=True, pin_memory=True, batch_size=config.batch_size)\n",
        "        loader = build_loader(self.train_dataset, config.batch_size)\n",
    )


def test_a_loader_a_helper_builds_for_the_class_is_sharded_where_the_helper_builds_it(handed):
    """The class trains on what a function of another module builds (a DataLoader with no sampler): the
    function gets `distributed=False` and a sampler when it is true, the class's call passes it, decided
    at run time, and the class's epoch loop sets the sampler's epoch; `check` on the output is silent and
    a second run changes nothing."""
    _helper_built(handed)
    result = ddpfix.fix_project("main.py")
    [sampler] = by_code(result)["DDP201"]
    assert (
        sampler.applied
        and "trains on loader, a DataLoader build_loader() builds for Trainer (trainer.py:39)" in sampler.message
    )
    assert not result.incomplete
    data = result.others["data.py"].code
    assert "def build_loader(dataset, batch_size, distributed=False):\n" in data
    assert "    sampler = DistributedSampler(dataset) if distributed else None\n" in data
    assert "shuffle=(sampler is None), sampler=sampler)" in data
    trainer = result.others["trainer.py"].code
    assert "loader = build_loader(self.train_dataset, config.batch_size, distributed=dist.is_initialized())" in trainer
    assert "                loader.sampler.set_epoch(epoch)\n" in trainer
    _write(handed, result)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []
    again = ddpfix.fix_project("main.py")
    assert again.code == result.code and not again.others


def test_a_helper_in_the_class_s_own_module_gets_both_edits_there(handed):
    """The function that builds the loader stands in trainer.py beside the class: the function's edit and
    the call's land in the one module, and `check` on the output is silent."""
    edit(
        handed / "trainer.py",
        "class Trainer:\n",
        "def build_loader(dataset, batch_size):\n"
        "    return DataLoader(dataset, batch_size=batch_size, shuffle=True)\n\n\nclass Trainer:\n",
    )
    edit(
        handed / "trainer.py",
        "        loader = DataLoader(self.train_dataset, shuffle=True, pin_memory=True, batch_size=config.batch_size)\n",
        "        loader = build_loader(self.train_dataset, config.batch_size)\n",
    )
    result = ddpfix.fix_project("main.py")
    assert by_code(result)["DDP201"][0].applied and not result.incomplete
    trainer = result.others["trainer.py"].code
    assert "def build_loader(dataset, batch_size, distributed=False):\n" in trainer
    assert "shuffle=(sampler is None), sampler=sampler)" in trainer
    assert "loader = build_loader(self.train_dataset, config.batch_size, distributed=dist.is_initialized())" in trainer
    assert trainer.count("set_epoch(epoch)") == 1
    _write(handed, result)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []


def test_a_helper_that_gives_a_sampler_when_asked_is_only_asked(handed):
    _helper_built(
        handed,
        "shuffle=not distributed, sampler=DistributedSampler(dataset) if distributed else None",
        ", DistributedSampler",
    )
    edit(handed / "data.py", "(dataset, batch_size)", "(dataset, batch_size, distributed=False)")
    result = ddpfix.fix_project("main.py")
    assert by_code(result)["DDP201"][0].applied and "data.py" not in result.others
    assert "distributed=dist.is_initialized())" in result.others["trainer.py"].code


def test_a_helper_reached_through_its_module_is_reported_not_left_silent(handed):
    """`data.build_loader(...)`: a function the fix does not follow there, so the conversion is
    incomplete, and `check` on the output says so too."""
    _helper_built(handed)
    edit(handed / "trainer.py", "from data import build_loader\n", "import data\n")
    edit(handed / "trainer.py", "loader = build_loader(", "loader = data.build_loader(")
    result = ddpfix.fix_project("main.py")
    [sampler] = by_code(result)["DDP201"]
    assert sampler.fix == "none" and "where the fix does not reach" in sampler.message
    assert [b.invariant.number for b in result.incomplete if b.code == "DDP201"] == [3]
    _write(handed, result)
    assert "DDP201" in {d.code for d in ddpfix.check_source(result.code, path="main.py", cross_file=True)}


def _write(folder: Path, result) -> None:
    (folder / "main.py").write_text(result.code)
    for path, change in result.others.items():
        (folder / path).write_text(change.code)


def test_a_helper_that_builds_a_distributed_sampler_is_not_reported(handed):
    _helper_built(handed, "sampler=DistributedSampler(dataset)", ", DistributedSampler")
    assert "DDP201" not in by_code(ddpfix.fix_project("main.py"))


def test_a_loader_built_for_the_rank_is_not_reported(handed):
    _helper_built(handed)
    edit(
        handed / "trainer.py",
        "build_loader(self.train_dataset, config.batch_size)",
        "build_loader(self.train_dataset, config.batch_size // dist.get_world_size())",
    )
    assert "DDP201" not in by_code(ddpfix.fix_project("main.py"))


# --------------------------------------------------------------------------- a class that moves the model
MOVES = Path(__file__).parent / "golden" / "trainer_moves_handed_model"


def test_a_model_the_class_moves_after_the_hand_over_is_wrapped_there_after_the_move(handed):
    """The script no longer moves the model; the class does, under `if torch.cuda.is_available():`,
    after it is handed over. A wrap in the script would hold a model on the CPU that is moved afterwards
    (its first backward fails on GPUs): the wrap goes in the class, after that whole `if`, and the
    class's save through a local name (`model = self.model`) writes the plain module's keys."""
    edit(handed / "main.py", ").to(device)\n", ")\n")
    result = ddpfix.fix_project("main.py")
    found = by_code(result)
    [wrap] = found["DDP301"]
    assert wrap.applied and "Trainer() at line 17 moves it to its device after the hand-over" in wrap.message
    assert "DDP(" not in result.code and "raw_model" not in result.code  # the script keeps the plain module
    trainer = result.others["trainer.py"].code
    moved = "            self.model = self.model.to(self.device)\n"
    wrapped = "        if dist.is_initialized():\n            self.model = DDP(self.model, device_ids="
    assert moved + wrapped in trainer
    assert 'torch.save(getattr(model, "module", model).state_dict(), self.config.ckpt_path)' in trainer
    assert [d.applied for d in found["DDP402"]] == [True] and not result.incomplete
    (handed / "main.py").write_text(result.code)
    (handed / "trainer.py").write_text(trainer)
    assert ddpfix.check_source(result.code, path="main.py", cross_file=True) == []


def test_the_optimizer_a_method_of_the_model_builds_trains_the_handed_model(tmp_path):
    """`self.optimizer = model.configure_optimizers(config)`, then `self.optimizer.step()`: the class
    trains the model it is handed (golden trainer_moves_handed_model), and moves it (kept_models.py)."""
    import ast

    from ddpfix.analysis.kept_models import ast_kept_model_uses
    from ddpfix.analysis.model_params import MOVES as MOVED
    from ddpfix.analysis.model_params import PARAMETERS, TRAINS

    tree = ast.parse((MOVES / "trainer.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Trainer")
    assert {PARAMETERS, TRAINS, MOVED} <= ast_kept_model_uses(cls)["model"]
    result = ddpfix.fix_project(MOVES / "input.py")
    [wrap] = by_code(result)["DDP301"]
    assert wrap.applied and "moves it to its device after the hand-over" in wrap.message
    assert "model.configure_optimizers at trainer.py:19" in wrap.message
    trainer = result.others[str(MOVES / "trainer.py")].code
    assert 'self.optimizer = getattr(model, "module", model).configure_optimizers(config)' in trainer
