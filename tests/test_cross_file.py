"""Fixes across files: a script's fix that also edits the script's own modules (docs/output.md,
"Fixes that edit the script's own modules"): one diff, all files written or none, --no-cross-file."""

from __future__ import annotations

import os
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

GOLDEN = Path(__file__).parent / "golden"
MODULE_CASE = GOLDEN / "loader_factory_module"
SHARED_CASE = GOLDEN / "loader_factory_shared"


def invoke(*args):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """loader_factory_module as a user has it: train.py beside data_utils.py, in the current folder."""
    shutil.copy(MODULE_CASE / "input.py", tmp_path / "train.py")
    shutil.copy(MODULE_CASE / "data_utils.py", tmp_path / "data_utils.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_fix_project_returns_the_module_edit_and_fix_source_stays_one_text(project):
    result = ddpfix.fix_project("train.py")
    assert list(result.others) == ["data_utils.py"]
    change = result.others["data_utils.py"]
    assert change.data == (MODULE_CASE / "expected" / "data_utils.py").read_bytes()
    assert change.original == (MODULE_CASE / "data_utils.py").read_bytes() and change.codes == ["DDP201"]
    assert result.full_diff.index("+++ b/train.py") < result.full_diff.index("+++ b/data_utils.py")
    assert result.incomplete == []
    alone = ddpfix.fix_source(Path("train.py").read_bytes(), path="train.py")  # one text: no other file
    assert alone.others == {} and "distributed=DISTRIBUTED" not in alone.code
    [d] = [d for d in alone.diagnostics if d.code == "DDP201"]
    assert d.fix == "none" and "cross-file edits are off" in d.message
    assert [i.code for i in alone.incomplete] == ["DDP201"]


def test_paths_may_be_path_objects(project):
    """`pathlib.Path` where the API takes a path: the same result as its string, no AttributeError."""
    by_str = ddpfix.fix_project("train.py")
    by_path = ddpfix.fix_project(Path("train.py"))
    assert by_path.code == by_str.code and list(by_path.others) == list(by_str.others) == ["data_utils.py"]
    data = Path("train.py").read_bytes()
    assert ddpfix.fix_source(data, path=Path("train.py")).code == ddpfix.fix_source(data, path="train.py").code
    assert ddpfix.check_source(data, path=project / "train.py") == ddpfix.check_source(
        data, path=str(project / "train.py")
    )


def test_diff_prints_one_multi_file_diff_and_writes_nothing(project):
    before = {p.name: p.read_bytes() for p in project.glob("*.py")}
    result = invoke("diff", "train.py")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert out.index("--- a/train.py") < out.index("--- a/data_utils.py")
    assert "+def build_loaders(batch_size, distributed=False):" in out
    assert result.stderr.splitlines()[1] == "data_utils.py: 1 hunk(s), +5 -2; edited for train.py: DDP201"
    assert {p.name: p.read_bytes() for p in project.glob("*.py")} == before


def test_apply_writes_every_file_and_a_second_apply_changes_nothing(project):
    result = invoke("apply", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_bytes() == (MODULE_CASE / "expected.py").read_bytes()
    assert (project / "data_utils.py").read_bytes() == (MODULE_CASE / "expected" / "data_utils.py").read_bytes()
    assert "data_utils.py: 1 hunk(s) applied, +5 -2; edited for train.py: DDP201" in result.stderr
    again = invoke("apply", "train.py")
    assert again.exit_code == 0 and again.stderr == "", again.output
    assert invoke("check", "train.py", "data_utils.py").exit_code == 0


@pytest.mark.parametrize("how", ["flag", "config"])
def test_no_cross_file_edits_the_named_files_only(project, how):
    if how == "config":
        (project / "pyproject.toml").write_text("[tool.ddpfix]\ncross-file = false\n")
    result = invoke("apply", "train.py", *(["--no-cross-file"] if how == "flag" else []))
    assert result.exit_code == 1, result.output  # the result is incomplete: the loader is not sharded
    assert (project / "data_utils.py").read_bytes() == (MODULE_CASE / "data_utils.py").read_bytes()
    assert "distributed=DISTRIBUTED" not in (project / "train.py").read_text()
    assert "not fixed: DDP201 (no automatic fix)" in result.stderr and "incomplete:" in result.stderr
    assert "cross-file edits are off" in invoke("check", "--no-cross-file", "train.py").stdout


def test_config_cross_file_must_be_a_boolean(project):
    (project / "pyproject.toml").write_text('[tool.ddpfix]\ncross-file = "no"\n')
    result = invoke("diff", "train.py")
    assert result.exit_code == 2 and "cross-file: expected true or false" in result.stderr


def test_a_failed_write_restores_the_files_already_written(project, monkeypatch):
    real = writing.write_atomic

    def failing(path, data, expected=None):
        if path == "data_utils.py" and expected is not None:
            raise DdpfixError("data_utils.py: cannot write: No space left on device")
        return real(path, data, expected)

    monkeypatch.setattr(writing, "write_atomic", failing)
    result = invoke("apply", "train.py")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    assert line == (
        "ddpfix: error: data_utils.py: cannot write: No space left on device; nothing rewritten (train.py restored)"
    )
    assert (project / "train.py").read_bytes() == (MODULE_CASE / "input.py").read_bytes()
    assert (project / "data_utils.py").read_bytes() == (MODULE_CASE / "data_utils.py").read_bytes()
    assert not list(project.glob(".ddpfix-*"))


@pytest.mark.parametrize(
    "change, why",
    [
        (
            '\n\nif __name__ == "__main__":\n    train_loader, _ = build_loaders(4)\n    print(len(train_loader))\n',
            "data_utils.py runs build_loaders() itself as a program",
        ),
        ("\n\ndistributed = True\n", None),  # a module-level name elsewhere does not block it
    ],
)
def test_factory_that_cannot_be_edited_safely_is_reported_with_why(project, change, why):
    with open(project / "data_utils.py", "a") as f:
        f.write(change)
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP201"]
    if why is None:
        assert d.applied and list(result.others) == ["data_utils.py"]
        return
    assert d.fix == "none" and why in d.message and result.others == {}


def test_factory_using_the_name_already_or_reading_kwargs_is_left_alone(project):
    text = (project / "data_utils.py").read_text()
    (project / "data_utils.py").write_text(
        text.replace("def build_loaders(batch_size):", "def build_loaders(batch_size, **kw):").replace(
            "shuffle=True)", "shuffle=True, **kw)"
        )
    )
    [d] = [d for d in ddpfix.fix_project("train.py").diagnostics if d.code == "DDP201"]
    assert d.fix == "none" and "takes its arguments from a dict" in d.message
    (project / "data_utils.py").write_text(text.replace("y = x.mean", "distributed = False\n    y = x.mean"))
    [d] = [d for d in ddpfix.fix_project("train.py").diagnostics if d.code == "DDP201"]
    assert d.fix == "none" and "already uses the name distributed" in d.message


def test_a_module_outside_the_script_folder_is_not_edited(tmp_path, monkeypatch):
    from ddpfix.analysis import ScriptFacts
    from ddpfix.api import parse
    from ddpfix.module_edits import ModuleEdits

    (tmp_path / "proj").mkdir()
    (tmp_path / "outside.py").write_text("x = 1\n")
    (tmp_path / "proj" / "inside.py").write_text("x = 1\n")
    script = tmp_path / "proj" / "train.py"
    script.write_text("import torch\n")
    edits = ModuleEdits(ScriptFacts(parse(script.read_text()), path=str(script), cross_file=True), False)
    assert edits.why_not(tmp_path / "outside.py") == f"{tmp_path / 'outside.py'} lies outside the script's folder"
    assert edits.why_not(tmp_path / "proj" / "inside.py") is None
    (tmp_path / "proj" / "env").mkdir()
    (tmp_path / "proj" / "env" / "pyvenv.cfg").write_text("")
    (tmp_path / "proj" / "env" / "lib.py").write_text("x = 1\n")
    assert edits.why_not(tmp_path / "proj" / "env" / "lib.py") == "env/lib.py is an installed package"


# ------------------------------------------------------------------------------ a module two scripts share
@pytest.fixture
def shared(tmp_path, monkeypatch):
    shutil.copy(SHARED_CASE / "input.py", tmp_path / "train.py")
    for name in ("finetune.py", "utils.py"):
        shutil.copy(SHARED_CASE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_two_scripts_sharing_a_factory_get_one_dual_mode_module(shared):
    result = invoke("apply", "train.py", "finetune.py")
    assert result.exit_code == 0, result.output
    assert (shared / "utils.py").read_bytes() == (SHARED_CASE / "expected" / "utils.py").read_bytes()
    assert (shared / "train.py").read_bytes() == (SHARED_CASE / "expected.py").read_bytes()
    finetune = (shared / "finetune.py").read_text()
    assert "get_loader(make_data(48, seed=3), batch_size=6, distributed=DISTRIBUTED)" in finetune
    assert "loader.sampler.set_epoch(epoch)" in finetune
    assert result.stderr.count("utils.py: ") == 1  # written once, for the first script
    again = invoke("diff", "train.py", "finetune.py", "utils.py")
    assert again.exit_code == 0 and again.stdout == "", again.output


def test_the_second_script_only_passes_the_parameter_the_module_has(shared):
    assert invoke("apply", "train.py").exit_code == 0
    module = (shared / "utils.py").read_bytes()
    result = ddpfix.fix_project("finetune.py")
    assert result.others == {}  # the module is dual-mode already: only the call changes
    [d] = [d for d in result.diagnostics if d.code == "DDP201"]
    assert d.applied and "gives it one only when called with distributed=True" in d.message
    assert (shared / "utils.py").read_bytes() == module


@pytest.mark.slow
def test_the_other_script_runs_as_before_with_the_edited_module(shared):
    """finetune.py, which the fix of train.py does not touch, prints what it printed before, single-process."""
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}

    def run() -> str:
        done = subprocess.run([sys.executable, "finetune.py"], capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    before = run()
    assert invoke("apply", "train.py").exit_code == 0
    assert "distributed=False" in (shared / "utils.py").read_text()
    assert run() == before


def test_docs_name_the_option():
    for doc in ("README.md", "docs/output.md"):
        text = (Path(__file__).parents[1] / doc).read_text()
        assert "--no-cross-file" in text, doc


@pytest.mark.slow
def test_apply_verify_proves_and_writes_the_module_edit_too(project):
    """`apply --verify` runs the rewrite with the module as the fix leaves it, and writes both files."""
    result = invoke("apply", "--verify", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "train.py").read_bytes() == (MODULE_CASE / "expected.py").read_bytes()
    assert (project / "data_utils.py").read_bytes() == (MODULE_CASE / "expected" / "data_utils.py").read_bytes()
    assert "shards disjoint" in result.stderr
