"""A wrap under a condition with no name kept for the plain module (`if DISTRIBUTED: model =
DDP(model)`) is a wrap all the same: the rules that need the plain module after it reach it as
`getattr(model, "module", model)`, the model itself in a plain run."""

from __future__ import annotations

from ddpfix import check_source, fix_source

CONDITIONAL = """\
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1


def main():
    if DISTRIBUTED:
        dist.init_process_group("gloo")
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    if not DISTRIBUTED or dist.get_rank() == 0:
        print(f"keys {sorted(model.state_dict())}")
        torch.save(model.state_dict(), "model.pt")
    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
"""


def test_the_saves_read_the_plain_module_through_getattr():
    """`if DISTRIBUTED: model = DDP(model)` and nothing kept: the saves of `model.state_dict()` would write
    'module.' keys under DDP; the fix reads the plain module the way both runs have it, with the quotes
    an f-string around it allows (before Python 3.12)."""
    assert [d.code for d in check_source(CONDITIONAL, path="train.py")] == ["DDP402", "DDP402"]
    out = fix_source(CONDITIONAL, path="train.py").code
    assert "print(f\"keys {sorted(getattr(model, 'module', model).state_dict())}\")" in out
    assert 'torch.save(getattr(model, "module", model).state_dict(), "model.pt")' in out
    assert check_source(out, path="train.py") == []
