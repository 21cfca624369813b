"""The cheap text screens in front of the analysis: they skip work, never findings."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from ddpfix import api, check_source, fix_source, parsing
from ddpfix.errors import DdpfixError


def test_a_file_that_never_mentions_torch_is_not_parsed_by_libcst(monkeypatch):
    monkeypatch.setattr(cst, "parse_module", lambda *a, **k: pytest.fail("parsed"))
    result = fix_source("import numpy as np\nx = np.zeros(3)\n")
    assert result.code == "import numpy as np\nx = np.zeros(3)\n" and result.diagnostics == [] and result.diff == ""
    with pytest.raises(DdpfixError, match="syntax error"):  # still refused when Python refuses it
        fix_source("def f(:\n")


def test_a_torch_file_that_cannot_train_skips_the_analysis(monkeypatch):
    monkeypatch.setattr(api, "ScriptFacts", lambda *a, **k: pytest.fail("analysed"))
    assert check_source("import torch\n\nx = torch.zeros(3)\nprint(x)\n") == []


NOT_TRAINING = [
    "import torch\n\nx = torch.zeros(3)  # ddpfix: ignore[DDP401]\n",
    "import torch  # ddpfix: ignore\nprint(torch.ones(1))\n",
    "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return x\n",
]
GOLDEN = sorted((Path(__file__).parent / "golden").glob("*/input.py"))


@pytest.mark.parametrize("source", NOT_TRAINING + [p.read_bytes() for p in GOLDEN])
def test_the_screen_changes_no_result(monkeypatch, source):
    screened = fix_source(source, unsafe_fixes=True)
    monkeypatch.setattr(parsing, "MIGHT_TRAIN", re.compile(""))  # matches every text
    monkeypatch.setattr(parsing, "GATE", False)  # and no file is passed over unparsed
    full = fix_source(source, unsafe_fixes=True)
    assert (screened.code, screened.diagnostics) == (full.code, full.diagnostics)


def test_an_aliased_process_group_is_enough_to_be_analysed():
    src = textwrap.dedent(
        """\
        import torch
        from torch.distributed import init_process_group as start


        def main():
            start("nccl")
            x = torch.zeros(3).cuda()
        """
    )
    assert "DDP006" in [d.code for d in check_source(src)]
