"""A CSV log whose class opens its file when it is built (csvlog.py)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from csvlog import CSVLogger

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
x = torch.randn(64, 4)
dataset = TensorDataset(x, x.sum(dim=1, keepdim=True))
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
model = nn.Linear(4, 1)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

if RANK == 0:
    csv_logger = CSVLogger(fieldnames=["epoch", "loss"], filename="log.csv")  # one row per epoch
for epoch in range(3):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if RANK == 0:
        csv_logger.writerow({"epoch": epoch, "loss": f"{loss.item():.4f}"})
if RANK == 0:
    csv_logger.close()

if DISTRIBUTED:
    dist.destroy_process_group()
