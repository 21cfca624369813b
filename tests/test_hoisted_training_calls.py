"""A call that trains, inside a statement a rank-0 guard is about to hide (a print, a tracker's log, a log
record): computed on every rank first, the guard holding only what shows it; where it cannot be taken out
(inside a comprehension), the statement is reported with no fix and stays on every rank."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import logging

    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset

    import wandb


    def train_epoch(model, loader, opt):
        for x, y in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
        return 0.5


    def main():
        logging.basicConfig(filename="train.log", level=logging.INFO)
        torch.manual_seed(0)
        loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        wandb.init(project="p")
        for epoch in range(2):
            {show}
    """
)


def script(show: str) -> str:
    return SCRIPT.replace("{show}", show)


def test_a_tracker_log_of_a_training_call_logs_on_rank_0_what_every_rank_trained():
    code = fix_source(script('wandb.log({"loss": train_epoch(model, loader, opt)})')).code
    assert (
        "        train_epoch_result = train_epoch(model, loader, opt)\n"
        "        if RANK == 0:\n"
        '            wandb.log({"loss": train_epoch_result})\n'
    ) in code


def test_a_log_record_of_a_training_call_is_written_by_rank_0_after_every_rank_trained():
    code = fix_source(script('logging.info(f"loss {train_epoch(model, loader, opt):.3f}")')).code
    assert (
        "        train_epoch_result = train_epoch(model, loader, opt)\n"
        "        if RANK == 0:\n"
        '            logging.info(f"loss {train_epoch_result:.3f}")\n'
    ) in code


def test_a_training_call_inside_a_comprehension_keeps_the_tracker_on_every_rank():
    src = script('wandb.log({k: train_epoch(model, loader, opt) for k in ["loss"]})')
    found = [d for d in check_source(src) if d.code == "DDP407"]
    assert found and all(d.fix == "none" for d in found), found
    code = fix_source(src).code
    assert '\n    wandb.init(project="p")\n' in code  # no guard: one more indent level
    assert "\n        wandb.log({k: train_epoch(model, loader, opt) for k in" in code
