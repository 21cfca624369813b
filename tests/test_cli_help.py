"""`--help` a person reads at 80 columns, the options every command shares, and colour control."""

from __future__ import annotations

import re

import pytest
import typer.main
from typer.testing import CliRunner

import ddpfix
from ddpfix.cli import app

GROUP = typer.main.get_command(app)
COMMANDS = list(GROUP.commands)
TYPE_LABELS = re.compile(r"<(list|bool|int|str|float|path)|\{\w+\}|\bTEXT\b|\bINTEGER\b|\bFLOAT\b|x>=|\brange\b")
TRAIN = (
    "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "model(torch.randn(2, 2)).sum().backward()\nopt.step()\nprint('done')\n"
)


def helps(*args: str, env: dict | None = None) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80", **(env or {})})
    assert result.exit_code == 0, result.output
    return result.stdout


def option_names(name: str | None) -> list[str]:
    command = GROUP if name is None else GROUP.commands[name]
    return [o for p in command.params if p.param_type_name == "option" for o in (*p.opts, *p.secondary_opts)]


@pytest.mark.parametrize("name", [None, *COMMANDS])
def test_help_fits_80_columns_with_every_option_whole_and_no_type_labels(name):
    text = helps(*([name] if name else []))
    assert [line for line in text.splitlines() if len(line) > 80] == []
    for option in [*option_names(name), "--help"]:
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text), (name, option)
    assert TYPE_LABELS.search(text) is None, TYPE_LABELS.search(text)
    assert "…" not in text


def test_help_uses_metavars_a_person_reads():
    check = helps("check")
    assert "Usage: ddpfix check [OPTIONS] [PATH]...\n" in check
    for row in (
        "  --select CODE ",
        "  -j, --jobs N ",
        "  --config FILE ",
        "  --exclude PATTERN ",
        "  -o, --output-file FILE ",
    ):
        assert row in check, row
    assert "  --format [text|json|sarif|github] " in check or "  --format [text|json|sarif|github]\n" in check
    assert "None given: the current folder" in " ".join(check.split())
    assert "Usage: ddpfix apply [OPTIONS] [PATH]...\n" in helps("apply")
    assert "Usage: ddpfix verify [OPTIONS] SCRIPT\n" in helps("verify")
    assert "Usage: ddpfix rules [OPTIONS] [CODE]\n" in helps("rules")
    assert "  --script SCRIPT " in helps("explain")
    top = helps()
    assert "  -V, --version " in top
    for name in COMMANDS:
        assert re.search(rf"^  {name} +\S", top, re.M), name


@pytest.mark.parametrize("name", COMMANDS)
def test_every_format_option_shows_its_choices(name):
    text = helps(name)
    if "--format" in option_names(name):
        assert re.search(r"--format \[\w+(\|\w+)+\]", text), text


def test_the_same_options_where_they_make_sense():
    for name in ("diff", "apply", "check"):
        names = option_names(name)
        for option in ("--color", "--no-color", "--exit-zero", "-q", "--quiet", "-v", "--verbose"):
            assert option in names, (name, option)
    for name in ("check", "rules", "verify"):
        assert "--format" in option_names(name), name
    assert "--exit-zero" in option_names("explain")


def test_version_short_and_long():
    for flag in ("-V", "--version"):
        result = CliRunner().invoke(app, [flag])
        assert result.exit_code == 0 and result.stdout == f"ddpfix {ddpfix.__version__}\n"


# ------------------------------------------------------------------------------------ colour
ESC = "\x1b["


@pytest.mark.parametrize("command", ["diff", "check"])
def test_no_color_and_force_color(work, command):
    (work / "train.py").write_text(TRAIN)

    def run(*flags: str, **env: str) -> str:
        return CliRunner().invoke(app, [command, *flags, "train.py"], env=env).stdout

    assert ESC not in run()  # not a terminal
    assert ESC in run(FORCE_COLOR="1")
    assert ESC not in run(FORCE_COLOR="0")
    assert ESC not in run(NO_COLOR="1", FORCE_COLOR="1")  # NO_COLOR wins over FORCE_COLOR
    assert ESC in run("--color", NO_COLOR="1")  # ... but not over --color
    assert ESC not in run("--no-color", FORCE_COLOR="1")
    plain = run()
    assert re.sub(r"\x1b\[[0-9;]*m", "", run("--color")) == plain  # colour adds nothing but colour


def test_exit_zero_on_check_apply_and_explain(work):
    (work / "train.py").write_text(TRAIN)
    runner = CliRunner()
    assert runner.invoke(app, ["check", "train.py"]).exit_code == 1
    zero = runner.invoke(app, ["check", "--exit-zero", "train.py"])
    assert zero.exit_code == 0 and "DDP001" in zero.stdout
    assert runner.invoke(app, ["check", "--exit-zero", "missing.py"]).exit_code == 2  # errors still exit 2
    assert runner.invoke(app, ["explain", "all went fine"]).exit_code == 1
    assert runner.invoke(app, ["explain", "--exit-zero", "all went fine"]).exit_code == 0
    assert runner.invoke(app, ["apply", "--exit-zero", "missing.py"]).exit_code == 2


def test_unknown_format_is_one_line(work):
    (work / "train.py").write_text(TRAIN)
    for args in (["check", "--format", "xml", "train.py"], ["rules", "--format", "xml"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "unknown format: xml" in result.stderr
