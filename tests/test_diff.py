"""Unified diffs that `git apply` accepts, whatever the line breaks inside the file."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ddpfix import DdpfixError, check_source, fix_source
from ddpfix.diff import split_lines, unified_diff

TRAIN = (
    "import torch\n\x0c\n"  # a form feed between sections: not a line break for git or Python
    "def main():\n"
    "    model = torch.nn.Linear(2, 1)\n"
    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
    "    model(torch.randn(2, 2)).sum().backward()\n"
    "    opt.step()\n"
    "    print('done')\n\n\n"
    "if __name__ == '__main__':\n    main()\n"
)


def test_split_lines_breaks_only_at_newlines():
    assert split_lines("a\x0cb\u2028c\r\nd\re\nf") == ["a\x0cb\u2028c\r\n", "d\r", "e\n", "f"]
    assert split_lines("") == [] and split_lines("x") == ["x"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_diff_with_a_form_feed_applies_with_git(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN, newline="")
    result = fix_source(TRAIN, path="train.py")
    assert result.changed and "\\ No newline" not in result.diff
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "fix.patch").write_text(result.diff, newline="")
    subprocess.run(["git", "apply", "fix.patch"], cwd=tmp_path, check=True)
    assert (tmp_path / "train.py").read_bytes().decode() == result.code


def test_missing_final_newline_is_marked():
    diff = unified_diff("a\nb", "a\nc", "x.py")
    assert diff.endswith("+c\n\\ No newline at end of file\n")


def test_chains_too_long_for_libcst_are_refused_not_crashed():
    src = "import torch\nok = " + " and ".join(["a"] * 5000) + "\n"
    with pytest.raises(DdpfixError, match="too deeply nested"):
        check_source(src)
    with pytest.raises(DdpfixError, match="too many nested parentheses"):
        check_source("import torch\nx = " + "[" * 1500 + "]" * 1500 + "\n")
