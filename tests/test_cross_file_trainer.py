"""Fixes across files in a Trainer class of the script's own modules (golden trainer_module): its saves
and prints are guarded to rank 0 there (DDP401, DDP406), and the state_dict() of the wrapper it is
handed is saved unwrapped (DDP402), all dual-mode."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ddpfix
from ddpfix.cli import app

CASE = Path(__file__).parent / "golden" / "trainer_module"
GUARD = "if not dist.is_initialized() or dist.get_rank() == 0:"
UNWRAPPED = 'getattr(self.model, "module", self.model).state_dict()'


def invoke(*args):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    shutil.copy(CASE / "trainer.py", tmp_path / "trainer.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _fit_chain(project: Path) -> None:
    """The Trainer keeps its loader and runs the epochs: `Trainer(model, optimizer, loader).fit(2)`."""
    text = (CASE / "trainer.py").read_text()
    text = text.replace(
        'def __init__(self, model, optimizer, out="checkpoint.pt"):', "def __init__(self, model, optimizer):"
    )
    text = text.replace("self.out = out", 'self.out = "checkpoint.pt"')
    text += (
        "\n    def fit(self, loader, epochs):\n"
        "        for epoch in range(epochs):\n"
        "            self.log(epoch, self.train_epoch(loader))\n"
        "            self.save()\n"
    )
    (project / "trainer.py").write_text(text)
    script = (CASE / "input.py").read_text()
    start = script.index("    trainer = Trainer(model, optimizer)")
    end = script.index('\n\nif __name__ == "__main__":')
    (project / "train.py").write_text(script[:start] + "    Trainer(model, optimizer).fit(loader, 2)\n" + script[end:])


def test_fix_project_guards_the_trainer_and_unwraps_its_state_dict(project):
    result = ddpfix.fix_project("train.py")
    assert list(result.others) == ["trainer.py"]
    change = result.others["trainer.py"]
    assert change.data == (CASE / "expected" / "trainer.py").read_bytes()
    assert change.codes == ["DDP401", "DDP402", "DDP406"]
    assert result.code == (CASE / "expected.py").read_text() and result.incomplete == []
    messages = {d.code: d.message for d in result.diagnostics}
    assert "trainer.save() runs torch.save on every rank (trainer.py:23)" in messages["DDP401"]
    assert "trainer.log() runs print on every rank (trainer.py:26)" in messages["DDP406"]
    assert "Trainer() saves the state_dict() of model" in messages["DDP402"]


def test_apply_writes_both_files_and_a_second_apply_changes_nothing(project):
    result = invoke("apply", "train.py")
    assert result.exit_code == 0, result.output
    assert (project / "trainer.py").read_bytes() == (CASE / "expected" / "trainer.py").read_bytes()
    assert "trainer.py: 2 hunk(s) applied" in result.stderr
    again = invoke("apply", "train.py")
    assert again.exit_code == 0 and again.stderr == "", again.output
    assert invoke("check", "train.py", "trainer.py").exit_code == 0


def test_no_cross_file_reports_the_module_writes_without_a_fix(project):
    result = ddpfix.fix_source(Path("train.py").read_bytes(), path="train.py")
    assert result.others == {}
    found = {d.code: d for d in result.diagnostics}
    for code in ("DDP401", "DDP406"):
        assert found[code].fix == "none" and "cross-file edits are off" in found[code].message
    assert "DDP402" not in found  # the module is not read as a tree without cross-file edits


def test_a_trainer_built_and_run_in_one_expression_is_fixed_too(project):
    _fit_chain(project)
    result = ddpfix.fix_project("train.py")
    text = result.others["trainer.py"].code
    assert text.count(GUARD) == 2 and UNWRAPPED in text
    messages = {d.code: d.message for d in result.diagnostics}
    assert messages["DDP401"].startswith("Trainer(...).fit() runs torch.save on every rank (trainer.py:23)")


def test_a_write_sharing_its_line_is_reported_with_why(project):
    text = (project / "trainer.py").read_text()
    (project / "trainer.py").write_text(text.replace("        print(f", "        n = 1; print(f"))
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP406"]
    assert d.fix == "none" and "the print at trainer.py:26 shares its line with other code" in d.message
    assert GUARD in result.others["trainer.py"].code  # the save is still guarded


@pytest.mark.parametrize("how", ["early return", "rank test"])
def test_writes_the_module_guards_already_are_left_alone(project, how):
    text = (project / "trainer.py").read_text()
    if how == "rank test":
        text = text.replace("        torch.save(", "        if self.rank == 0:\n            torch.save(")
    else:
        text = text.replace(
            "    def save(self):\n", "    def save(self):\n        if self.rank != 0:\n            return\n"
        )
    text = text.replace("        self.out = out\n", "        self.out = out\n        self.rank = 0\n")
    (project / "trainer.py").write_text(text)
    result = ddpfix.fix_project("train.py")
    assert "DDP401" not in {d.code for d in result.diagnostics}
    assert result.others["trainer.py"].codes == ["DDP402", "DDP406"]


def test_json_and_sarif_carry_the_module_edits_of_a_rule(project):
    from ddpfix.diff import apply_edits

    result = invoke("check", "--format", "json", "train.py")
    records = {r["code"]: r for r in json.loads(result.stdout)}
    save = records["DDP401"]["fix"]["edits"]
    assert {e["path"] for e in save} == {"trainer.py"}  # the script itself needs nothing for this fix
    fixed = apply_edits((CASE / "trainer.py").read_text(), save)
    assert fixed.count(GUARD) == 1 and "import torch.distributed as dist" in fixed
    assert {e["path"] for e in records["DDP201"]["fix"]["edits"]} == {"train.py"}
    sarif = json.loads(invoke("check", "--format", "sarif", "train.py").stdout)
    [item] = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "DDP401"]
    [change] = item["fixes"][0]["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "trainer.py", "uriBaseId": "%SRCROOT%"}
    assert len(change["replacements"]) == len(save)
    off = json.loads(invoke("check", "--no-cross-file", "--format", "json", "train.py").stdout)
    assert [r["fix"] for r in off if r["code"] == "DDP401"] == [None]


def test_a_fix_that_edits_only_a_module_is_applied(project):
    """The script is distributed already: only trainer.py changes, and apply writes it."""
    result = invoke("apply", "train.py")
    assert result.exit_code == 0, result.output
    (project / "trainer.py").write_bytes((CASE / "trainer.py").read_bytes())  # the module as it was
    again = invoke("apply", "train.py")
    assert again.exit_code == 0, again.output
    text = (project / "trainer.py").read_text()
    assert text.count(GUARD) == 1 and UNWRAPPED in text  # DDP406 leaves a distributed script's prints alone
    assert "trainer.py: 2 hunk(s) applied, +3 -1; edited for train.py: DDP401, DDP402" in again.stderr
    assert (project / "train.py").read_bytes() == (CASE / "expected.py").read_bytes()


def test_a_print_whose_value_runs_a_method_of_the_object_is_not_guarded(project):
    """`print(f"... {self.evaluate():.4f}")`: guarded to rank 0, the method (a forward through the DDP
    wrapper) would run on rank 0 alone; the print is reported with why, the module left as it is there."""
    trainer = project / "trainer.py"
    text = trainer.read_text().replace(
        'print(f"epoch {epoch}: loss {loss:.4f}")',
        'print(f"epoch {epoch}: loss {loss:.4f} eval {self.evaluate():.4f}")',
    )
    text += "\n    def evaluate(self):\n        with torch.no_grad():\n            return self.model(torch.ones(1, 4)).item()\n"
    trainer.write_text(text)
    result = ddpfix.fix_project("train.py")
    [shown] = [d for d in result.diagnostics if d.code == "DDP406"]
    assert not shown.applied and "calls self.evaluate(), which would then run on rank 0 only" in shown.message
    code = result.others["trainer.py"].code
    assert "        if not dist.is_initialized() or dist.get_rank() == 0:\n            torch.save(" in code  # save
    assert 'print(f"epoch {epoch}: loss {loss:.4f} eval' in code and code.count("get_rank() == 0") == 1
