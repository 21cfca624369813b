"""Puts the parts of lib.py together and trains; torch itself is only imported there."""

import os

from lib import build_loader, build_model, build_optimizer, train
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    model = build_model()
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = build_optimizer(model)
    loader = build_loader(distributed=DISTRIBUTED)
    train(model, optimizer, loader, epochs=3)

    if DISTRIBUTED:
        dist.destroy_process_group()
