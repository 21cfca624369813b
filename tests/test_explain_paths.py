"""`ddpfix explain PATH`: an argument that looks like a path must exist; a traceback into --script."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.explain.reading import looks_like_path

SCRIPT = (
    "import torch\nfrom helpers import make_loader\n\nloader = make_loader(shuffle=True)\nfor x in loader:\n    pass\n"
)
LOG = """\
Traceback (most recent call last):
  File "/home/me/proj/train.py", line 4, in <module>
    loader = make_loader(shuffle=True)
  File "/home/me/proj/helpers.py", line 9, in make_loader
    return DataLoader(ds, shuffle=shuffle, sampler=DistributedSampler(ds))
  File "/usr/lib/python3/site-packages/torch/utils/data/dataloader.py", line 351, in __init__
    raise ValueError("sampler option is mutually exclusive with shuffle")
ValueError: sampler option is mutually exclusive with shuffle
"""


def invoke(*args):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("arg", ["run.log", "out.txt", "train.py", "logs/run", "./rank0", "C:\\logs\\run"])
def test_a_missing_path_is_one_line_and_exit_2(work, arg):
    result = invoke("explain", arg)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == f"ddpfix: error: {arg}: no such file (quote an error message; a log file must exist)\n"


@pytest.mark.parametrize(
    "arg",
    [
        "NCCL timeout in rank 1",  # spaces: a message
        "ProcessGroupNCCL.cpp",  # one word, not a log/text/script name
        "https://example.com/a/b",  # a URL
        "Watchdog caught collective operation timeout: see run.log",
    ],
)
def test_a_message_is_not_taken_for_a_path(arg):
    assert not looks_like_path(arg)
    assert invoke("explain", arg).exit_code in (0, 1)


def test_an_existing_log_named_so_is_read(work):
    (work / "run.log").write_text(LOG)
    result = invoke("explain", "run.log")
    assert result.exit_code == 0 and "DDP203" in result.stdout


def test_script_without_findings_shows_the_line_the_traceback_points_at(work):
    (work / "train.py").write_text(SCRIPT)
    (work / "run.log").write_text(LOG)
    result = invoke("explain", "run.log", "--script", "train.py")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "In train.py: none of these rules finds anything, but the traceback points at line 4:" in out
    assert "  4 | loader = make_loader(shuffle=True)\n" in out
    assert "  DDP203 (sampler-with-shuffle) would apply there: " in out
    assert "cause may be outside the script" not in out


def test_a_traceback_into_another_file_changes_nothing(work):
    (work / "main.py").write_text(SCRIPT)
    (work / "run.log").write_text(LOG)
    out = invoke("explain", "run.log", "--script", "main.py").stdout
    assert "traceback points at" not in out and "cause may be outside the script" in out


def test_a_frame_past_the_end_of_the_script_is_not_shown(work):
    (work / "train.py").write_text("import torch\n")
    (work / "run.log").write_text(LOG)
    out = invoke("explain", "run.log", "--script", "train.py").stdout
    assert "traceback points at" not in out
