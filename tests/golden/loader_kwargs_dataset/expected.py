"""A module-level script whose loader arguments, the dataset among them, are one dict."""
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

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
features = torch.randn(96, 5)
targets = features.sum(1, keepdim=True)
loader_args = dict(
    dataset=TensorDataset(features, targets),
    batch_size=12,
    shuffle=True,
)
if DISTRIBUTED:
    loader_args["sampler"] = DistributedSampler(loader_args["dataset"], shuffle=loader_args.pop("shuffle", False))
loader = DataLoader(**loader_args)

model = nn.Linear(5, 1)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    if DISTRIBUTED:
        loader.sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch}: loss {loss.item():.3f}")

if DISTRIBUTED:
    dist.destroy_process_group()
