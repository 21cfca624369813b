"""A finding `check` calls fixable is one `apply` fixes: a module other files import gets no fixes, so
its findings offer none, and `diff`/`apply` say why each is left, even with nothing to rewrite."""

from __future__ import annotations

import os
import textwrap

from typer.testing import CliRunner

from ddpfix import check_source, fix_source
from ddpfix.cli import app

LIBRARY = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader


    def fit(model, ds, epochs):
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(epochs):
            for x, y in loader:
                opt.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                opt.step()
            print(f"epoch {epoch}")
    """
)


def test_a_module_other_files_import_promises_no_fix():
    checked = check_source(LIBRARY)
    assert [d.code for d in checked] == ["DDP201", "DDP406"]
    assert all(d.fix == "none" and "runs no training as a program" in d.message for d in checked)
    fixed = fix_source(LIBRARY)
    assert fixed.code == LIBRARY
    assert [(d.code, d.fix, d.applied) for d in fixed.diagnostics] == [(d.code, d.fix, False) for d in checked]


def test_diff_and_apply_say_why_nothing_was_fixed(tmp_path):
    (tmp_path / "lib.py").write_text(LIBRARY)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        runner = CliRunner()
        for command in ("diff", "apply"):
            result = runner.invoke(app, [command, "lib.py"])
            assert result.exit_code == 0, result.output
            assert "fixed: nothing; not fixed: DDP201" in result.stderr and "DDP406" in result.stderr
        assert (tmp_path / "lib.py").read_text() == LIBRARY
        checked = runner.invoke(app, ["check", "lib.py"])
        assert "[*]" not in checked.stdout and "0 fixable" in checked.output
    finally:
        os.chdir(old)
