"""`ddpfix explain`: error texts and logs map to the rules behind them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ddpfix.cli import app
from ddpfix.explain import explain_text, likely_codes

CASES = [
    ("ValueError: sampler option is mutually exclusive with shuffle", "DDP203"),
    (
        'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "conv.weight", '
        '"conv.bias".\n\tUnexpected key(s) in state_dict: "module.conv.weight", "module.conv.bias".',
        "DDP403",
    ),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] Timed out waiting 8000ms for recv operation to complete",
        "DDP101",
    ),
    (
        "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.",
        "DDP101",
    ),
    (
        "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
        "DDP001",
    ),
    (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss.",
        "DDP310",
    ),
    ("ValueError: SyncBatchNorm expected input tensor to be on GPU or XPU or privateuseone", "DDP306"),
    ("ncclInvalidUsage: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000", "DDP006"),
    ("ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "DDP002"),
    ("AttributeError: 'DistributedDataParallel' object has no attribute 'generate'", "DDP308"),
    ("TypeError: main_noarg() takes 1 positional argument but 2 were given", "DDP004"),
    ("FileExistsError: [Errno 17] File exists: 'runs/exp1'", "DDP420"),
    ("zipfile.BadZipFile: File is not a zip file", "DDP208"),
    ("EOFError: Compressed file ended before the end-of-stream marker was reached", "DDP208"),
]


@pytest.mark.parametrize("text,code", CASES)
def test_error_text_names_the_rule(text, code):
    codes = likely_codes(explain_text(text))
    assert codes and codes[0] == code, codes


def test_specific_pattern_hides_the_generic_one():
    matches = explain_text(CASES[1][0])
    assert len(matches) == 1


def test_unknown_text_matches_nothing():
    assert explain_text("everything went fine") == []


def test_log_file_and_script(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("W1129 starting\n" + CASES[0][0] + "\nexiting\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n"
        "from torch.utils.data.distributed import DistributedSampler\n"
        "import torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "ds = TensorDataset(torch.randn(8, 2))\n"
        "sampler = DistributedSampler(ds)\n"
        "loader = DataLoader(ds, shuffle=True, sampler=sampler)\n"
        "model = torch.nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "for epoch in range(2):\n"
        "    sampler.set_epoch(epoch)\n"
        "    for (x,) in loader:\n"
        "        model(x).sum().backward()\n"
        "        opt.step()\n"
    )
    result = CliRunner().invoke(app, ["explain", str(log), "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "matched line 2" in result.output
    assert f"{script}:8:" in result.output and "DDP203" in result.output


def test_rule_code_prints_docs():
    result = CliRunner().invoke(app, ["explain", "DDP204"])
    assert result.exit_code == 0
    assert "set_epoch" in result.output and "## Why" in result.output


def test_nothing_matched_exits_1():
    result = CliRunner().invoke(app, ["explain", "all good"])
    assert result.exit_code == 1
