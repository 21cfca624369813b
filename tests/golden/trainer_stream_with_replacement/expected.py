"""Classifies noisy prototypes with the iteration-based Trainer of trainer.py."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset

from trainer import Trainer


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def make_dataset(n=120, classes=4, dim=10):
    g = torch.Generator().manual_seed(7)
    prototypes = torch.randn(classes, dim, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    return TensorDataset(prototypes[labels] + 0.3 * torch.randn(n, dim, generator=g), labels)


if __name__ == "__main__":
    torch.manual_seed(3)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 4)).to(device)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    config = {
        "learning_rate": 1e-2,
        "batch_size": 8,
        "grad_norm_clip": 1.0,
        "max_iters": 24,
        "log_every": 6,
        "out": "classifier.pt",
    }
    trainer = Trainer(config, model, make_dataset())
    trainer.run()

if DISTRIBUTED:
    dist.destroy_process_group()
