"""A helper of the script's own modules handed the model after the wrap (golden load_weights_helper):
`load_weights(model, path)` loads a plain checkpoint into what it is handed and returns it. Dropping
what it returns, the script is given the plain module to pass (DDP403); keeping it
(`model = load_weights(model, path)`), passing the plain module would replace the wrapper, so the
call is reported without a fix and the rewrite is incomplete there."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import ddpfix

CASE = Path(__file__).parent / "golden" / "load_weights_helper"
CALL = '    load_weights(model, "best.pt")\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    shutil.copy(CASE / "input.py", tmp_path / "train.py")
    shutil.copy(CASE / "checkpoints.py", tmp_path / "checkpoints.py")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _edit_script(project: Path, old: str, new: str) -> None:
    text = (project / "train.py").read_text()
    assert old in text
    (project / "train.py").write_text(text.replace(old, new))


def test_the_returned_model_dropped_the_plain_module_is_passed(project):
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP403"]
    assert d.fix == "safe" and d.applied and d.message.endswith("pass raw_model")
    assert '    load_weights(raw_model, "best.pt")\n' in result.code
    assert result.incomplete == []


def test_the_returned_model_kept_is_reported_without_a_fix(project):
    _edit_script(project, CALL, '    model = load_weights(model, "best.pt")\n')
    result = ddpfix.fix_project("train.py")
    [d] = [d for d in result.diagnostics if d.code == "DDP403"]
    assert d.fix == "none"
    assert "it hands model back, and what it returns is kept here" in d.message
    assert '    model = load_weights(model, "best.pt")\n' in result.code  # not load_weights(raw_model, ...)
    assert [(b.code, b.line) for b in result.incomplete] == [("DDP403", d.line)]


def test_the_same_helper_in_the_script_itself(project):
    helper = (project / "checkpoints.py").read_text().split('"""\n', 2)[-1].replace("import torch\n", "")
    _edit_script(project, "from checkpoints import load_weights, save_checkpoint\n", "")
    _edit_script(project, "\n\ndef make_split", helper.rstrip("\n") + "\n\n\ndef make_split")
    fixed = ddpfix.fix_project("train.py")
    assert '    load_weights(raw_model, "best.pt")\n' in fixed.code and fixed.incomplete == []
    _edit_script(project, CALL, '    model = load_weights(model, "best.pt")\n')
    kept = ddpfix.fix_project("train.py")
    [d] = [d for d in kept.diagnostics if d.code == "DDP403"]
    assert d.fix == "none" and [b.code for b in kept.incomplete] == ["DDP403"]


def test_a_helper_that_only_hands_the_model_back_is_not_reported(project):
    text = (project / "checkpoints.py").read_text()
    (project / "checkpoints.py").write_text(text + "\n\ndef to_cpu(model):\n    model.cpu()\n    return model\n")
    _edit_script(project, "import load_weights, save_checkpoint", "import load_weights, save_checkpoint, to_cpu")
    _edit_script(project, CALL, CALL + "    to_cpu(model)\n    net = to_cpu(model)\n")
    result = ddpfix.fix_project("train.py")
    assert "    to_cpu(model)\n    net = to_cpu(model)\n" in result.code
    assert [d.code for d in result.diagnostics if d.code in ("DDP103", "DDP308", "DDP402", "DDP403")] == [
        "DDP402",
        "DDP403",
        "DDP103",
    ]
