"""Module-level entry: the loaders come from data.py, the Trainer of trainer.py owns the loops."""
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

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
train_loader, _ = build_loaders(batch_size=8, distributed=DISTRIBUTED)  # the validation loader is not used here

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

trainer = Trainer(model, optimizer)
trainer.fit(train_loader, epochs=2)
if RANK == 0:
    torch.save(raw_model.state_dict(), "model.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
