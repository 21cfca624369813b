"""Finer cases for the data rules (DDP104, DDP201-DDP209) and the file-system race (DDP411): what they
catch, what they fix, and the near misses they must leave alone."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

HEAD = """\
import os
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1
"""


def script(body: str) -> str:
    return HEAD + textwrap.dedent(body)


def found(src: str, code: str, path: str | None = None) -> list:
    return [d for d in check_source(src, path=path) if d.code == code]


def fixed(src: str, *codes: str, **kw) -> str:
    return fix_source(src, select=list(codes), **kw).code


# --------------------------------------------------------------------------- DDP206
EVAL = """
def main():
    dist.init_process_group("gloo")
    model = DDP(nn.Linear(2, 2))
    val = TensorDataset(torch.randn(5, 2), torch.randint(0, 2, (5,)))
    sampler = DistributedSampler(val, shuffle=False{sargs})
    val_loader = DataLoader(val, batch_size=2, sampler=sampler)
    correct = 0
    for x, y in val_loader:
        correct += (model(x).argmax(1) == y).sum().item()
"""


def test_ddp206_padding_sampler_is_reported():
    assert [d.fix for d in found(script(EVAL.format(sargs="")), "DDP206")] == ["none"]
    assert len(found(script(EVAL.format(sargs=", drop_last=False")), "DDP206")) == 1


def test_ddp206_sampler_that_drops_the_tail_does_not_pad():
    assert found(script(EVAL.format(sargs=", drop_last=True")), "DDP206") == []
    conditional = EVAL.format(sargs=", drop_last=True").replace(
        "shuffle=False, drop_last=True)", "shuffle=False, drop_last=True) if DISTRIBUTED else None"
    )
    assert found(script(conditional), "DDP206") == []
