"""DataParallel on a path that only evaluates and leaves (`if args.test_only: ...; sys.exit(0)`) beside
the trained model's own DataParallel: the evaluation's line is kept for a plain run only, with no DDP
wrap, and does not stop the trained model's conversion; and `net.module if use_cuda else net` becomes
the plain module kept before the wrap (after the conversion the wrapper is there on the CPU path too)."""

from __future__ import annotations

import textwrap

import pytest

from ddpfix import check_source, fix_project, fix_source

SCRIPT = """
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()
test_only = len(sys.argv) > 1
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)

if test_only:
    net = torch.load("net.pt", weights_only=False)
    if use_cuda:
        net.cuda()
        net = nn.DataParallel(net)
    net.eval()
    with torch.no_grad():
        print(sum(nn.functional.mse_loss(net(x), y).item() for x, y in loader))
    {leave}

net = nn.Linear(4, 1)
if use_cuda:
    net.cuda()
    net = nn.DataParallel(net)
opt = torch.optim.SGD(net.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
torch.save({saved}, "net.pt")
"""


def line_of(src: str, text: str, nth: int = 0) -> int:
    return [i for i, line in enumerate(src.splitlines(), 1) if text in line][nth]


EVALUATED = line_of(textwrap.dedent(SCRIPT), "nn.DataParallel(net)")  # the evaluation's line
TRAINED = line_of(textwrap.dedent(SCRIPT), "nn.DataParallel(net)", 1)


def script(leave: str = "sys.exit(0)", saved: str = "net.module if use_cuda else net") -> str:
    return textwrap.dedent(SCRIPT).format(leave=leave, saved=saved)


@pytest.mark.parametrize("leave", ["sys.exit(0)", "raise SystemExit(0)"])
def test_an_evaluation_branch_that_leaves_keeps_its_dataparallel_for_the_plain_run(leave):
    result = fix_source(script(leave))
    out = result.code
    assert result.incomplete == [], [b.format() for b in result.incomplete]
    assert "        if not DISTRIBUTED:\n            net = nn.DataParallel(net)\n    net.eval()" in out, out
    assert out.count(" = DDP(") == 1 and "init_process_group(" in out and "DistributedSampler(" in out, out
    assert 'torch.save(raw_net, "net.pt")' in out, out  # the choice of the two is the plain module either way
    evaluation = [d for d in result.diagnostics if d.code == "DDP302" and d.line == EVALUATED]
    assert len(evaluation) == 1 and evaluation[0].applied and "only evaluates" in evaluation[0].message


def test_check_says_what_apply_does_on_the_evaluation_branch():
    fixes = {(d.code, d.line): d.fix for d in check_source(script()) if d.code in ("DDP302", "DDP201")}
    assert fixes == {("DDP201", 11): "safe", ("DDP302", EVALUATED): "safe", ("DDP302", TRAINED): "safe"}, fixes


def test_a_branch_that_goes_on_to_train_is_not_an_evaluation():
    """Without the exit the branch's model goes on to the training code: two DataParallel lines of one
    model, converted by hand as before."""
    src = script(leave="pass")
    result = fix_source(src)
    assert result.code == src, result.diff
    assert any(b.code == "DDP302" for b in result.incomplete), [b.format() for b in result.incomplete]


def test_an_evaluation_that_reads_the_dataparallel_module_is_left_to_the_user():
    """`net.module` in the evaluation: the plain model under torchrun has none."""
    src = script().replace("    net.eval()\n", "    net.module.eval()\n")
    result = fix_source(src)
    assert result.code == src, result.diff
    blocked = [d for d in result.diagnostics if d.code == "DDP302" and d.line == EVALUATED]
    assert blocked and blocked[0].fix == "none" and "net.module" in blocked[0].message


def test_a_choice_whose_test_does_something_keeps_its_test():
    """`net.module if ready() else net`: the test may do something, so only `net.module` is replaced."""
    src = script(saved="net.module if ready() else net").replace("use_cuda = ", "ready = lambda: True\nuse_cuda = ")
    out = fix_source(src).code
    assert 'torch.save(raw_net if ready() else net, "net.pt")' in out, out


def test_a_branch_that_trains_through_a_function_of_the_scripts_modules_is_not_an_evaluation(tmp_path):
    """`fit(net, loader)` from fitting.py trains the branch's DataParallel model before the exit: that
    line is the trained model's too (two DataParallel lines of one model: by hand), not a plain-run-only
    evaluation, which would have left the model it trains unwrapped under torchrun."""
    (tmp_path / "fitting.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\ndef fit(net, loader):\n"
        "    opt = torch.optim.SGD(net.parameters(), lr=0.1)\n    for x, y in loader:\n"
        "        loss = nn.functional.mse_loss(net(x), y)\n        opt.zero_grad()\n"
        "        loss.backward()\n        opt.step()\n"
    )
    evaluation = "    net.eval()\n    with torch.no_grad():\n        print(sum(nn.functional.mse_loss(net(x), y).item() for x, y in loader))\n"
    src = "from fitting import fit\n" + script().replace(evaluation, "    fit(net, loader)\n")
    path = tmp_path / "train.py"
    path.write_text(src)
    result = fix_project(str(path))
    assert result.code == src and not result.others, result.full_diff
    assert [d.fix for d in result.diagnostics if d.code == "DDP302"] == ["none", "none"]
