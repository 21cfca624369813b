"""The `ddpfix` command: fix levels, bad input, stdin, folders, writes, output control."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import ddpfix
from ddpfix import cli
from ddpfix.cli import app

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


def invoke(*args, input=None):
    return CliRunner().invoke(app, list(args), input=input)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# ------------------------------------------------------------------------------------ fix levels
def test_apply_applies_safe_fixes_only(work):
    p = write(work / "train.py", TRAIN)
    result = invoke("apply", "train.py")
    assert result.exit_code == 0, result.output
    text = p.read_text()
    assert "init_process_group" in text and "if RANK == 0:" in text
    assert "SyncBatchNorm" not in text
    assert result.stderr.startswith("train.py: ") and " hunk(s) applied, +" in result.stderr
    assert "fixed: DDP001" in result.stderr and "not fixed: DDP306" in result.stderr
    compile(text, "train.py", "exec")
    # applying again changes nothing
    before = p.read_bytes()
    assert invoke("apply", "train.py").exit_code == 0 and p.read_bytes() == before


def test_unsafe_fixes_flag_adds_unsafe_fixes(work):
    p = write(work / "train.py", TRAIN)
    assert invoke("apply", "--unsafe-fixes", "train.py").exit_code == 0
    assert "SyncBatchNorm.convert_sync_batchnorm" in p.read_text()


@pytest.mark.parametrize("flags", [[], ["--unsafe-fixes"], ["--select", "DDP4"], ["--ignore", "DDP001"]])
def test_diff_shows_exactly_what_apply_does(work, flags):
    p = write(work / "train.py", TRAIN)
    shown = invoke("diff", *flags, "train.py")
    assert shown.exit_code == 1
    assert p.read_text() == TRAIN  # diff never writes
    expected = ddpfix.fix_source(TRAIN, path="train.py", **_api(flags)).diff
    assert shown.stdout == expected
    assert invoke("apply", *flags, "train.py").exit_code == 0
    assert p.read_text() == ddpfix.fix_source(TRAIN, **_api(flags)).code


def _api(flags):
    kw = {}
    if "--unsafe-fixes" in flags:
        kw["unsafe_fixes"] = True
    if "--select" in flags:
        kw["select"] = [flags[flags.index("--select") + 1]]
    if "--ignore" in flags:
        kw["ignore"] = [flags[flags.index("--ignore") + 1]]
    return kw


def test_diff_exit_0_when_nothing_to_change(work):
    write(work / "ok.py", "x = 1\n")
    result = invoke("diff", "ok.py")
    assert result.exit_code == 0 and result.stdout == ""


def test_check_marks_fix_levels_and_counts(work):
    write(work / "train.py", TRAIN)
    result = invoke("check", "train.py")
    assert result.exit_code == 1
    assert "DDP306 [unsafe fix]" in result.stdout and "DDP401 [*]" in result.stdout
    assert "fixable with `ddpfix apply`, 1 more with `--unsafe-fixes`" in result.stderr


def test_unknown_rule_code_on_the_command_line(work):
    write(work / "train.py", TRAIN)
    result = invoke("check", "--select", "DDP99", "train.py")
    assert result.exit_code == 2
    assert result.stderr.startswith("ddpfix: error: --select/--ignore: unknown rule code or prefix: DDP99")
    assert result.stderr.count("\n") == 1


# ------------------------------------------------------------------------------------ bad input
BAD = [
    ("syntax.py", TRAIN.encode() + b"def broken(:\n", "syntax error"),
    ("undecodable.py", b"import torch\nx = '\xff\xfe'\n", "cannot decode"),
    ("latin1_cookie_lie.py", b"# -*- coding: utf-8 -*-\nimport torch\ns = '\xe9'\n", "cannot decode"),
    ("binary.py", b"\x00\x01torch", "binary file"),
]


@pytest.mark.parametrize("command", ["check", "diff", "apply"])
@pytest.mark.parametrize("name,data,message", BAD)
def test_bad_input_one_line_exit_2_file_untouched(work, command, name, data, message):
    p = write(work / name, data)
    mtime = p.stat().st_mtime_ns
    result = invoke(command, name)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"ddpfix: error: {name}") and message in result.stderr
    assert "Traceback" not in result.output
    assert p.read_bytes() == data and p.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("command", ["check", "diff", "apply"])
def test_missing_path(work, command):
    result = invoke(command, "nope.py")
    assert result.exit_code == 2
    assert result.stderr == "ddpfix: error: nope.py: no such file or directory\n"


def test_one_bad_file_does_not_stop_the_others(work):
    write(work / "a_bad.py", "def (:\n")
    good = write(work / "b_good.py", TRAIN)
    result = invoke("apply", ".")
    assert result.exit_code == 2
    assert "init_process_group" in good.read_text()


def test_no_paths_checks_the_current_folder_and_apply_needs_one(work):
    write(work / "sub" / "train.py", TRAIN)
    checked = invoke("check")
    assert checked.exit_code == 1 and "sub/train.py:" in checked.stdout and "DDP401" in checked.stdout
    diffed = invoke("diff")
    assert diffed.exit_code == 1 and "+++ b/sub/train.py" in diffed.stdout and "init_process_group" in diffed.stdout
    applied = invoke("apply")
    assert applied.exit_code == 2 and applied.stdout == ""
    assert applied.stderr.count("\n") == 1 and applied.stderr.startswith("ddpfix: error: apply rewrites files in place")
    assert (work / "sub" / "train.py").read_text() == TRAIN


# ------------------------------------------------------------------------------------ stdin
def test_stdin_check(work):
    result = invoke("check", "-", input=TRAIN)
    assert result.exit_code == 1
    assert "-:11:9: DDP401" in result.stdout


def test_stdin_diff(work):
    result = invoke("diff", "-", input=TRAIN)
    assert result.exit_code == 1
    assert result.stdout.startswith("--- a/-\n+++ b/-\n")


def test_stdin_apply_writes_to_stdout(work):
    result = invoke("apply", "-", input=TRAIN)
    assert result.exit_code == 0
    assert result.stdout == ddpfix.fix_source(TRAIN).code
    result = invoke("apply", "-", input="x = 1\n")
    assert result.stdout == "x = 1\n"


def test_stdin_bad_input(work):
    result = invoke("apply", "-", input="def (:\n")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("ddpfix: error: -:1:")


def test_stdin_filename_names_the_input(work):
    result = invoke("check", "-", "--stdin-filename", "src/train.py", input=TRAIN)
    assert "src/train.py:11:9: DDP401" in result.stdout


# ------------------------------------------------------------------------------------ folders
def test_folder_walk_skips_git_venvs_and_gitignored(work):
    write(work / "proj" / "train.py", TRAIN)
    write(work / "proj" / ".git" / "hook.py", TRAIN)
    write(work / "proj" / ".venv" / "pyvenv.cfg", "home = /usr\n")
    write(work / "proj" / ".venv" / "lib" / "site.py", TRAIN)
    write(work / "proj" / "outputs" / "copy.py", TRAIN)
    write(work / "proj" / ".gitignore", "outputs/\n")
    result = invoke("check", "proj")
    files = {line.split(":")[0] for line in result.stdout.splitlines()}
    assert files == {os.path.join("proj", "train.py")}


def test_apply_walks_a_folder(work):
    a = write(work / "src" / "a.py", TRAIN)
    b = write(work / "src" / "pkg" / "b.py", TRAIN)
    c = write(work / "src" / "util.py", "x = 1\n")
    assert invoke("apply", "src").exit_code == 0
    assert "init_process_group" in a.read_text() and "init_process_group" in b.read_text()
    assert c.read_text() == "x = 1\n"


# ------------------------------------------------------------------------------------ writing
def test_apply_keeps_permissions(work):
    p = write(work / "train.py", TRAIN)
    os.chmod(p, 0o750)
    assert invoke("apply", "train.py").exit_code == 0
    assert stat.S_IMODE(p.stat().st_mode) == 0o750
    assert "init_process_group" in p.read_text()


def test_apply_refuses_read_only(work):
    p = write(work / "train.py", TRAIN)
    os.chmod(p, 0o444)
    result = invoke("apply", "train.py")
    assert result.exit_code == 2 and "read-only" in result.stderr
    assert p.read_text() == TRAIN


def test_crlf_round_trip_through_apply(work):
    data = TRAIN.replace("\n", "\r\n").encode()
    p = write(work / "train.py", data)
    assert invoke("apply", "train.py").exit_code == 0
    out = p.read_bytes()
    assert b"init_process_group" in out
    assert out.count(b"\n") == out.count(b"\r\n")  # every line break is still CRLF
    assert out.replace(b"\r\n", b"\n").decode() == ddpfix.fix_source(TRAIN).code


def test_latin1_source_keeps_its_encoding(work):
    data = ("# -*- coding: latin-1 -*-\n" + TRAIN.replace("print(epoch)", "print('époque', epoch)")).encode("latin-1")
    p = write(work / "train.py", data)
    assert invoke("apply", "train.py").exit_code == 0
    out = p.read_bytes()
    assert "époque".encode("latin-1") in out and b"init_process_group" in out


# ------------------------------------------------------------------------------------ output control
def test_quiet_and_verbose(work):
    write(work / "train.py", TRAIN)
    quiet = invoke("check", "-q", "train.py")
    assert quiet.exit_code == 1 and "DDP401" in quiet.stdout and quiet.stderr == ""
    write(work / "pyproject.toml", "[tool.ddpfix]\nignore = ['DDP306']\n")
    verbose = invoke("check", "-v", "train.py")
    assert "config: " in verbose.stderr and "pyproject.toml" in verbose.stderr
    assert "train.py: " in verbose.stderr and " ms" in verbose.stderr and "1 file(s) in" in verbose.stderr
    applied = invoke("apply", "-q", "train.py")
    assert applied.exit_code == 0 and applied.stderr == ""


def test_progress_bar_only_on_a_terminal_for_many_files(work, monkeypatch):
    for i in range(12):
        write(work / f"f{i}.py", "x = 1\n")
    # not a terminal (CliRunner): no bar
    assert invoke("check", ".").stderr == ""
    # a terminal: rich draws the bar on stderr (transient: it clears itself at the end)
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    monkeypatch.setenv("FORCE_COLOR", "1")
    shown = invoke("check", "-j", "1", ".")
    assert "ddpfix" in shown.stderr and "12/12" in shown.stderr and "━" in shown.stderr
    pooled = invoke("check", "-j", "2", ".")  # the bar starts after the workers are forked
    assert "12/12" in pooled.stderr
    assert invoke("check", "-q", ".").stderr == ""
    few = invoke("check", "f1.py", "f2.py")
    assert few.stderr == ""


def test_jobs_give_the_same_report(work):
    for i in range(10):
        write(work / f"t{i}.py", TRAIN.replace("x.pt", f"x{i}.pt"))
    one = invoke("check", "-j", "1", ".")
    two = invoke("check", "-j", "2", ".")
    assert one.exit_code == two.exit_code == 1
    assert one.stdout == two.stdout and one.stdout.count("DDP401") == 10


def test_rules_lists_every_rule_and_prints_docs(work):
    result = invoke("rules")
    assert result.exit_code == 0
    codes = [line.split()[0] for line in result.stdout.splitlines()]
    from ddpfix.transforms import RULES

    assert set(codes) == {r.code for r in RULES} | {"DDP000"}
    page = invoke("rules", "ddp000", "--long")
    assert page.exit_code == 0 and "## What" in page.stdout and "unused-suppression" in page.stdout
    assert invoke("rules", "DDP999").exit_code == 2


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"ddpfix {ddpfix.__version__}"


def test_module_entry_point(work):
    import subprocess
    import sys

    write(work / "train.py", TRAIN)
    proc = subprocess.run(
        [sys.executable, "-m", "ddpfix", "check", "train.py"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "DDP401" in proc.stdout


def test_cli_module_exports():
    assert cli.main and cli.app


def test_diff_exit_zero_still_prints_the_diff(tmp_path):
    from typer.testing import CliRunner

    from ddpfix.cli import app

    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nmodel = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model(torch.randn(2, 2)).sum().backward()\nopt.step()\nprint('done')\n"
    )
    plain = CliRunner().invoke(app, ["diff", str(script)])
    zero = CliRunner().invoke(app, ["diff", "--exit-zero", str(script)])
    assert plain.exit_code == 1 and zero.exit_code == 0
    assert "+if RANK == 0:" in zero.stdout and zero.stdout == plain.stdout


def test_an_information_line_is_not_a_problem(tmp_path):
    """A framework's script gets one [info] line; `check` reports it and still exits 0."""
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom accelerate import Accelerator\n\naccelerator = Accelerator()\n"
        "model = torch.nn.Linear(2, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "model, opt = accelerator.prepare(model, opt)\n"
    )
    result = CliRunner().invoke(app, ["check", str(script)])
    assert result.exit_code == 0, result.output
    assert "DDP008 [info] distribution is handled by Accelerate" in result.stdout
    assert "Found 1 note(s)." in result.stderr
    result = CliRunner().invoke(app, ["check", "--format", "json", str(script)])
    assert result.exit_code == 0 and '"severity": "info"' in result.stdout
