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


SCRIPT = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn

    model = nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        opt.zero_grad()
        model(torch.ones(1, 2)).sum().backward()
        opt.step()
        print(step)
    """
)


def test_a_fix_reported_as_made_that_plans_no_edit_is_withheld(monkeypatch):
    """A rule that reports its fix as made but plans nothing: the finding is not `applied` with the
    script unchanged, it carries why."""
    from ddpfix.transforms import BY_CODE

    def report_only(ctx):
        for call in ctx.facts.index.statement_calls(lambda c: getattr(c.func, "value", None) == "print"):
            ctx.report(call)

    monkeypatch.setattr(BY_CODE["DDP406"], "run", report_only)
    result = fix_source(SCRIPT, select=["DDP406"])
    assert result.code == SCRIPT
    [found] = result.diagnostics
    assert found.code == "DDP406" and not found.applied and found.withheld == "its fix plans no edit here"
    assert result.withheld == {"DDP406": "its fix plans no edit here"}
