"""Modules a training script runs only to sample (pytorch-ddpm's samplers, an EMA copy), under
`torch.no_grad()`: their DataParallel lines are kept for the plain run alone (no DDP wrap: nothing of
them is trained), and the fixed noise they sample from (`x_T = torch.randn(...)`, also saved in the
checkpoint) is not the task the ranks train on (DDP210 stays silent)."""

from __future__ import annotations

import textwrap

from invariants import converted

from ddpfix import check_source

SCRIPT = textwrap.dedent(
    """
    import sys

    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    parallel = "--parallel" in sys.argv


    class Trainer(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return F.mse_loss(self.model(x + torch.randn_like(x)), x)


    class Sampler(nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, x):
            return self.model(x)


    def evaluate(sampler, x):
        with torch.no_grad():
            return sampler(x).mean().item()


    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
    model = nn.Linear(4, 4)
    ema = nn.Linear(4, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(model)
    net_sampler = Sampler(model)
    ema_sampler = Sampler(ema)
    if parallel:
        trainer = nn.DataParallel(trainer)
        net_sampler = nn.DataParallel(net_sampler)
        ema_sampler = nn.DataParallel(ema_sampler)
    """
).lstrip()
LOOP = textwrap.dedent(
    """
    x_T = torch.randn(4, 4)
    for (x,) in loader:
        loss = trainer(x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            sample = ema_sampler(x_T)
        ckpt = {"model": model.state_dict(), "x_T": x_T}
    print(evaluate(net_sampler, x_T))
    torch.save(ckpt, "ckpt.pt")
    """
)


def test_lines_of_modules_run_only_without_gradients_stay_for_the_plain_run():
    out = converted(SCRIPT + LOOP.replace("torch.randn(4, 4)\n", "torch.ones(4, 4)\n"))
    kept = (
        "if parallel and not DISTRIBUTED:\n    trainer = nn.DataParallel(trainer)\n"
        "    net_sampler = nn.DataParallel(net_sampler)\n    ema_sampler = nn.DataParallel(ema_sampler)\n"
        "if DISTRIBUTED:\n    trainer = DDP(trainer"
    )
    assert kept in out, out
    assert "DDP(net_sampler" not in out and "DDP(ema_sampler" not in out and "DDP(model" not in out
    assert [d.fix for d in check_source(SCRIPT + LOOP) if d.code == "DDP302"] == ["safe"] * 3


def test_a_module_run_with_gradients_is_not_kept_plain():
    """The sampler's forward feeds the loss: it is not evaluation-only, and its line is not kept plain."""
    loop = LOOP.replace("loss = trainer(x)", "loss = trainer(x) + net_sampler(x).mean()")
    lines = {d.line: d.fix for d in check_source(SCRIPT + loop) if d.code == "DDP302"}
    trainer, net_sampler, ema_sampler = sorted(lines)
    assert lines[trainer] != "safe" and lines[net_sampler] != "safe" and lines[ema_sampler] == "safe", lines


def test_noise_only_sampled_from_and_saved_is_not_the_task():
    """`x_T` is read under no_grad and put in the checkpoint: not what the loss is computed from."""
    src = (
        (SCRIPT + LOOP)
        .replace("torch.manual_seed(0)\n", "")
        .replace("torch.randn(64, 4)", "torch.from_numpy(__import__('numpy').ones((64, 4), 'float32'))")
    )
    assert [d for d in check_source(src) if d.code == "DDP210"] == []


def test_a_random_target_the_loss_reads_is_still_the_task():
    src = (
        (SCRIPT + LOOP)
        .replace("torch.manual_seed(0)\n", "")
        .replace("torch.randn(64, 4)", "torch.from_numpy(__import__('numpy').ones((64, 4), 'float32'))")
    )
    src = src.replace("loss = trainer(x)", "loss = trainer(x) + (x_T - x[:4]).pow(2).mean()")
    [d] = [d for d in check_source(src) if d.code == "DDP210"]
    assert "`x_T`" in d.message
