"""The line `diff`/`apply` print per file (why each code is not fixed), and the step after `apply`."""

from __future__ import annotations

import textwrap

from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.cli.output import summary
from ddpfix.diagnostic import Diagnostic, Result
from ddpfix.engine import FileResult

TRAIN = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    def main():
        model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            opt.step()
            print(epoch)
            torch.save(model.state_dict(), "x.pt")


    if __name__ == "__main__":
        main()
    """
)


def invoke(*args):
    return CliRunner().invoke(app, list(args))


def test_not_fixed_says_why_for_an_unsafe_fix(work):
    (work / "train.py").write_text(TRAIN)
    diff = invoke("diff", "train.py")
    assert diff.exit_code == 1
    line = diff.stderr.strip()
    assert line.startswith("train.py: 1 hunk(s), +")
    assert "; not fixed: DDP306 (unsafe: --unsafe-fixes)" in line
    fixed = line.split("; fixed: ")[1].split(";")[0].split(", ")
    assert "DDP001" in fixed and "DDP306" not in fixed
    unsafe = invoke("diff", "--unsafe-fixes", "train.py")
    assert "not fixed" not in unsafe.stderr and "DDP306" in unsafe.stderr.split("; fixed: ")[1]


def test_not_fixed_says_why_for_a_rule_without_a_fix(work):
    from ddpfix.docs import lookup
    from ddpfix.examples import REPORTS, examples_of

    source = next(ex.source for ex in examples_of(lookup("DDP104")[0]) if ex.kind == REPORTS)
    (work / "train.py").write_text(source)
    line = invoke("diff", "train.py").stderr.splitlines()[0]
    not_fixed = line.split("; not fixed: ")[1].split(";")[0].split(", ")
    assert "DDP104 (no automatic fix)" in not_fixed, line
    assert "DDP104" not in line.split("; fixed: ")[1].split(";")[0]


def _result(*diagnostics: Diagnostic) -> FileResult:
    return FileResult(
        "train.py", result=Result("a\n", "b\n", list(diagnostics), diff="--- a\n+++ b\n@@ -1 +1 @@\n-a\n+b\n")
    )


def _d(code: str, fix: str, applied: bool = False, withheld: str | None = None, line: int = 1) -> Diagnostic:
    return Diagnostic(code, "m", line, 1, line, 2, fix=fix, applied=applied, withheld=withheld)


def test_a_code_partly_fixed_is_listed_as_fixed_with_a_count_never_as_not_fixed():
    text = summary(
        _result(
            _d("DDP201", "safe", applied=True, line=3),
            _d("DDP201", "none", line=9),
            _d("DDP409", "none"),
            _d("DDP303", "safe", withheld="the wrap would read a name before it is bound"),
            _d("DDP306", "unsafe"),
        )
    )
    assert "; fixed: DDP201 (1 of 2);" in text
    assert "; not fixed: DDP306 (unsafe: --unsafe-fixes), DDP409 (no automatic fix);" in text
    assert text.count("DDP303") == 1 and "DDP303 (the wrap would read a name before it is bound)" in text
    assert "unsafe: --unsafe-fixes" not in summary(_result(_d("DDP306", "unsafe")), unsafe_fixes=True)


def test_apply_names_the_next_step_once(work):
    (work / "train.py").write_text(TRAIN)
    (work / "other.py").write_text(TRAIN.replace("x.pt", "y.pt"))
    one = invoke("apply", "train.py")
    assert one.exit_code == 0
    assert one.stderr.splitlines()[-1] == "next: ddpfix verify train.py -- <your script's args>"
    assert one.stderr.count("next:") == 1
    again = invoke("apply", "train.py")  # nothing left to change: no next step to name
    assert "next:" not in again.stderr
    both = invoke("apply", "--unsafe-fixes", ".")
    assert both.stderr.count("next:") == 1 and "next: ddpfix verify SCRIPT -- " in both.stderr
    (work / "third.py").write_text(TRAIN)
    assert invoke("apply", "-q", "third.py").stderr == ""
    piped = CliRunner().invoke(app, ["apply", "-"], input=TRAIN)
    assert "next:" not in piped.stderr


def test_apply_lists_what_is_left_with_its_line(work):
    """After apply, each finding the result keeps is named with its line and why (the contract's own
    breaches come as incomplete lines instead)."""
    (work / "train.py").write_text(TRAIN)
    result = invoke("apply", "train.py")
    left = [line for line in result.stderr.splitlines() if ": left: " in line]
    assert left and all(line.startswith("train.py:") for line in left)
    [syncbn] = [line for line in left if " DDP306 " in line]
    line = int(syncbn.split(":")[1])
    assert "BatchNorm" in TRAIN.splitlines()[line - 1] and syncbn.endswith("(unsafe: --unsafe-fixes)")
