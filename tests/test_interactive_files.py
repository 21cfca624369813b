"""`ddpfix apply -i` over a fix that also edits the script's own modules: the hunks of every file in
one walk, a script hunk that passes a module's new parameter bringing the module's hunk that adds it,
and each script's files written all or none."""

from __future__ import annotations

import ast
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ddpfix
from ddpfix import writing
from ddpfix.cli import app
from ddpfix.errors import DdpfixError
from ddpfix.interactive_files import cross_problem, project_plans, settle

GOLDEN = Path(__file__).parent / "golden"
CASE = GOLDEN / "loader_factory_module"
PROJECTS = sorted(p.parent.name for p in GOLDEN.glob("*/expected"))
PROMPT = "Apply this hunk [y,n,a,d,q,?]? "


def copy_case(name: str, dest: Path) -> Path:
    """The golden's project as a user has it (its script as input.py), without the expected outputs."""
    for p in (GOLDEN / name).rglob("*"):
        rel = p.relative_to(GOLDEN / name)
        if rel.parts[0] in ("expected", "expected.py") or p.is_dir() or p.suffix not in (".py", ".json"):
            continue
        if rel.name == "options.json":
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest / rel)
    return dest


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(copy_case("loader_factory_module", tmp_path))
    return tmp_path


def plans_here(script: str = "input.py"):
    result = ddpfix.fix_project(script)
    return project_plans(script, Path(script).read_bytes(), result), result


def apply_i(answers: str, *args):
    return CliRunner().invoke(app, ["apply", "-i", *args, "input.py"], input=answers)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def answers_for(plans, pick) -> str:
    """One answer per hunk, file after file: y where pick(plan, hunk) says so."""
    return "".join("y\n" if pick(p, h) else "n\n" for p in plans for h in p.hunks)


def test_the_walk_covers_the_module_and_names_the_hunk_the_call_needs(project):
    plans, _ = plans_here()
    assert [p.path for p in plans] == ["input.py", "data_utils.py"]
    result = apply_i("n\n" * sum(len(p.hunks) for p in plans))
    assert result.exit_code == 0, result.output
    assert result.stdout.count(PROMPT) == sum(len(p.hunks) for p in plans)
    assert "--- data_utils.py: 1 hunk(s), edited for input.py" in result.stdout
    assert "data_utils.py: DDP201 missing-distributed-sampler" in result.stdout
    assert "hunk 1 of data_utils.py (adds the parameter distributed to build_loaders)" in result.stdout
    assert snapshot(project) == snapshot(copy_case("loader_factory_module", project.parent / "orig"))


def test_the_hunk_passing_the_parameter_brings_the_module_hunk_that_adds_it(project):
    plans, _ = plans_here()
    call = next(h for h in plans[0].hunks if "distributed=DISTRIBUTED" in str(h.hunk))
    assert call.elsewhere == {("data_utils.py", 0): "adds the parameter distributed to build_loaders"}
    result = apply_i(answers_for(plans, lambda p, h: h is call))
    assert result.exit_code == 0, result.output
    assert "input.py: hunk 2 needs hunk 1 of data_utils.py (adds the parameter distributed to build_loaders)" in (
        result.stdout
    )
    assert "data_utils.py: 1 of 1 hunk(s) applied; edited for input.py" in result.stderr
    assert "def build_loaders(batch_size, distributed=False):" in (project / "data_utils.py").read_text()
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    done = subprocess.run([sys.executable, "input.py"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr  # the call and the function agree: it runs
    assert "epoch 1: val" in done.stdout


def test_only_the_module_hunks_write_only_the_module(project):
    plans, result = plans_here()
    before = (project / "input.py").read_bytes()
    run = apply_i(answers_for(plans, lambda p, h: p.path == "data_utils.py"))
    assert (project / "input.py").read_bytes() == before
    assert (project / "data_utils.py").read_bytes() == result.others["data_utils.py"].data
    assert "input.py: " not in run.stderr.replace("edited for input.py", "")


def test_q_writes_nothing(project):
    before = snapshot(project)
    result = apply_i("q\n")
    assert result.exit_code == 0 and result.stdout.count(PROMPT) == 1
    assert snapshot(project) == before


def test_no_cross_file_walks_the_script_only(project):
    result = apply_i("a\n", "--no-cross-file")
    assert "--- data_utils.py" not in result.stdout and result.stdout.count(PROMPT) == 1
    assert (project / "data_utils.py").read_bytes() == (CASE / "data_utils.py").read_bytes()
    assert "distributed=DISTRIBUTED" not in (project / "input.py").read_text()
    assert (project / "input.py").read_text() == ddpfix.fix_source(
        (CASE / "input.py").read_bytes(), path="input.py"
    ).code


def test_interactive_still_refuses_the_source_from_stdin(project):
    result = CliRunner().invoke(app, ["apply", "-i", "-"], input="x = 1\n")
    assert result.exit_code == 2 and "cannot also read the source from '-'" in result.stderr


@pytest.mark.parametrize("name", PROJECTS)
def test_a_everywhere_writes_what_apply_writes(name, tmp_path, monkeypatch):
    walked = copy_case(name, tmp_path / "walked")
    applied = copy_case(name, tmp_path / "applied")
    monkeypatch.chdir(applied)
    assert CliRunner().invoke(app, ["apply", "input.py"]).exit_code in (0, 1)
    monkeypatch.chdir(walked)
    plans, _ = plans_here()
    result = apply_i("a\n" * len(plans))
    assert result.stdout.count(PROMPT) == sum(1 for p in plans if p.hunks)  # one answer per file
    assert snapshot(walked) == snapshot(applied)
    assert snapshot(walked) != snapshot(copy_case(name, tmp_path / "orig"))


@pytest.mark.parametrize("name", PROJECTS)
def test_random_selections_across_files_stay_consistent(name, tmp_path, monkeypatch):
    """Whatever is chosen, each file parses and the script's calls fit its modules as written: the
    needs across files suffice, the final check never has to refuse."""
    monkeypatch.chdir(copy_case(name, tmp_path))
    plans, _ = plans_here()
    rng = random.Random(name)
    for _ in range(25):
        chosen = [{h.index for h in p.hunks if rng.random() < 0.4} for p in plans]
        said: list[str] = []
        outcomes = settle(plans, chosen, said.append)
        assert not any("as chosen does not" in s for s in said), said
        texts = {o.path: o.text if o.text is not None else p.old for o, p in zip(outcomes, plans, strict=True)}
        for text in texts.values():
            ast.parse(text)
        if outcomes[0].text is not None:
            modules = {p.path: (p, texts[p.path]) for p in plans[1:]}
            assert cross_problem(plans[0], texts[plans[0].path], modules) is None
        for o, picked in zip(outcomes, chosen, strict=True):
            assert o.text is None or picked <= o.chosen


def test_the_final_check_refuses_a_call_the_module_does_not_take(project):
    plans, _ = plans_here()
    entry, module = plans
    problem = cross_problem(entry, entry.new, {"data_utils.py": (module, module.old)})
    assert problem == "input.py passes distributed= to build_loaders, which data_utils.py as chosen does not take"
    assert cross_problem(entry, entry.new, {"data_utils.py": (module, module.new)}) is None
    for info in entry.hunks:  # without the recorded need, the check is what keeps the files apart
        info.elsewhere.clear()
    call = next(h.index for h in entry.hunks if "distributed=DISTRIBUTED" in str(h.hunk))
    said: list[str] = []
    outcomes = settle(plans, [{call}, set()], said.append)
    assert all(o.data is None for o in outcomes)
    assert f"input.py: {problem}; nothing written for input.py and its modules" in said


def test_a_failed_write_restores_the_files_of_the_script(project, monkeypatch):
    real = writing.write_atomic

    def failing(path, data, expected=None):
        if path == "data_utils.py" and expected is not None:
            raise DdpfixError("data_utils.py: cannot write: No space left on device")
        return real(path, data, expected)

    monkeypatch.setattr(writing, "write_atomic", failing)
    before = snapshot(project)
    result = apply_i("a\na\n")
    assert result.exit_code == 2
    assert "nothing rewritten (input.py restored)" in result.stderr
    assert snapshot(project) == before


def test_two_scripts_editing_one_module_are_walked_one_at_a_time(tmp_path, monkeypatch):
    shared = GOLDEN / "loader_factory_shared"
    for name in ("input.py", "finetune.py", "utils.py"):
        shutil.copy(shared / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["apply", "-i", "input.py", "finetune.py"], input="a\na\n")
    assert result.exit_code == 2
    assert "utils.py: the fix of finetune.py edits it, as does that of input.py; apply -i them one at a time" in (
        result.stderr
    )
    assert (tmp_path / "utils.py").read_bytes() == (shared / "expected" / "utils.py").read_bytes()
    assert (tmp_path / "finetune.py").read_bytes() == (shared / "finetune.py").read_bytes()


def test_a_call_over_several_lines_needs_the_module_hunk_by_its_keyword_line(project):
    text = (project / "input.py").read_text()
    (project / "input.py").write_text(
        text.replace("build_loaders(batch_size=9)", "build_loaders(\n        batch_size=9,\n    )")
    )
    plans, _ = plans_here()
    [needing] = [h for h in plans[0].hunks if h.elsewhere]
    assert "+        distributed=DISTRIBUTED," in str(needing.hunk) and "build_loaders(" not in str(needing.hunk)
    assert needing.elsewhere == {("data_utils.py", 0): "adds the parameter distributed to build_loaders"}


def test_a_name_the_script_imports_from_a_module_needs_the_hunk_defining_it(tmp_path, monkeypatch):
    from ddpfix.diagnostic import FileChange, Result
    from ddpfix.interactive import FilePlan
    from ddpfix.interactive_files import link

    monkeypatch.chdir(tmp_path)
    old, new = "from util import build\n\nbuild(2)\n", "from util import build, make\n\nbuild(2, part=make())\n"
    mod_old = "def build(n):\n    return n\n"
    mod_new = "def build(n, part=None):\n    return n\n\n\ndef make():\n    return None\n"
    (tmp_path / "train.py").write_text(old)
    (tmp_path / "util.py").write_text(mod_old)
    entry = FilePlan("train.py", old, Result(source=old, code=new), solos={})
    change = FileChange("util.py", mod_old, mod_new, mod_new.encode(), mod_old.encode(), ["DDP201"])
    module = FilePlan("util.py", mod_old.encode(), change, solos={}, script="train.py")
    link(entry, [module])
    [hunk] = entry.hunks
    assert hunk.elsewhere == {("util.py", 0): "adds the parameter part to build, defines make"}
    half = "def build(n, part=None):\n    return n\n"
    assert cross_problem(entry, new, {"util.py": (module, half)}) == (
        "train.py imports make from util.py, which util.py as chosen does not define"
    )
    assert cross_problem(entry, new, {"util.py": (module, mod_new)}) is None
    assert cross_problem(entry, old, {"util.py": (module, mod_old)}) is None


@pytest.mark.parametrize("name", ["gan_solver_module", "trainer_builds_model", "loader_factory_module"])
def test_every_hunk_of_every_file_is_labelled(name, tmp_path, monkeypatch):
    """Where the script's own fix is made only with its module's (the process group where the module's
    class wraps the models), no rule's fix alone explains the hunk: it is labelled by what the fix
    makes without each rule."""
    monkeypatch.chdir(copy_case(name, tmp_path))
    plans, _ = plans_here()
    assert {p.path: [h.index for h in p.hunks if not h.labels] for p in plans} == {p.path: [] for p in plans}
    sampler = next(h for h in plans[0].hunks if "Sampler(" in str(h.hunk) or "distributed=DIS" in str(h.hunk))
    assert "DDP201" in sampler.labels
