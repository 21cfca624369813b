"""Fits a small regressor with the reusable Trainer of trainer.py."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset

from trainer import Trainer, TrainerConfig

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(42)
x = torch.randn(160, 6)
y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1) + 0.1 * torch.randn(160, 1)
dataset = TensorDataset(x, y)

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
config = TrainerConfig(max_epochs=3, batch_size=16, ckpt_path="regressor.pt")
trainer = Trainer(model, dataset, config)
trainer.train()

if DISTRIBUTED:
    dist.destroy_process_group()
