"""DataParallel in both branches of an if/else (pytorch-retinanet: `if torch.cuda.is_available(): net =
nn.DataParallel(net).cuda()` / `else: net = nn.DataParallel(net)`): the plain run keeps both, and
under torchrun a DDP branch goes first, the `if` becoming its `elif`."""

from __future__ import annotations

import textwrap

from invariants import converted

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
    net = nn.Linear(4, 1)
    {move}if torch.cuda.is_available():
        net = nn.DataParallel(net){cuda}
    else:
        net = nn.DataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for x, y in loader:
        loss = nn.functional.mse_loss(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
).lstrip()
MOVE = "if torch.cuda.is_available():\n    net = net.cuda()\n"


def test_both_branches_become_the_elif_and_else_of_a_ddp_branch():
    src = SCRIPT.format(move=MOVE, cuda=".cuda()")
    assert [d.fix for d in check_source(src) if d.code == "DDP302"] == ["safe", "safe"]
    out = converted(src)
    choice = (
        "if DISTRIBUTED:\n    net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)\n"
        "elif torch.cuda.is_available():\n    net = nn.DataParallel(net).cuda()\n"
        "else:\n    net = nn.DataParallel(net)\n"
    )
    assert choice in out, out


def test_without_a_move_before_the_if_the_lines_own_move_keeps_it_by_hand():
    """`.cuda()` in the CUDA branch is then the only move: a DDP branch would not know to make it."""
    src = SCRIPT.format(move="", cuda=".cuda()")
    assert "safe" not in [d.fix for d in check_source(src) if d.code == "DDP302"]
    assert "if DISTRIBUTED:\n    net = DDP(" not in fix_source(src).code


def test_branches_without_a_move_need_none_before():
    src = SCRIPT.format(move="", cuda="")
    out = fix_source(src).code
    assert "if DISTRIBUTED:\n    net = DDP(net" in out and "elif torch.cuda.is_available():\n" in out, out
