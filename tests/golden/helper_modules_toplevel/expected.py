"""Trains the regressor of model.py on the data of data.py with the loops of engine.py, at module level."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

from data import build_loaders
from engine import evaluate, train_one_epoch
from model import build_model

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
train_loader, val_loader = build_loaders(batch_size=8, distributed=DISTRIBUTED)
model = build_model()
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(3):
    if isinstance(train_loader.sampler, DistributedSampler):
        train_loader.sampler.set_epoch(epoch)
    train_one_epoch(model, train_loader, optimizer, epoch)
    val_loss = evaluate(model, val_loader)
    if RANK == 0:
        print(f"epoch {epoch}: val {val_loss:.4f}")

if RANK == 0:
    torch.save(raw_model.state_dict(), "model.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
