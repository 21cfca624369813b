"""Saves the model through the Trainer that keeps it, then loads the checkpoint into a fresh model."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from data import build_loaders
from trainer import Trainer


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def make_model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_loader, _ = build_loaders(batch_size=8, distributed=DISTRIBUTED)
    model = make_model()
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    trainer = Trainer(model, optimizer)
    trainer.fit(train_loader, epochs=2)
    if RANK == 0:
        torch.save(getattr(trainer.model, "module", trainer.model).state_dict(), "model.pt")

    restored = make_model()
    if DISTRIBUTED:
        dist.barrier()
    restored.load_state_dict(torch.load("model.pt", map_location="cpu"))  # the plain model's keys, as a plain run saves them
    if RANK == 0:
        print("restored", sum(p.numel() for p in restored.parameters()), "parameters")

    if DISTRIBUTED:
        dist.destroy_process_group()
