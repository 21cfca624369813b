"""Fit a curve with a small MLP, taking every point at every step (full-batch gradient descent)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(1)
x = torch.unsqueeze(torch.linspace(-1, 1, 200), dim=1)
y = x.pow(2) + 0.2 * torch.rand(x.size())

net = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1))
if DISTRIBUTED:
    net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
loss_func = nn.MSELoss()

x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]  # this rank's part of the full batch, one size on every rank
y_shard = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]
for t in range(100):
    prediction = net(x_shard)
    loss = loss_func(prediction, y_shard)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

if RANK == 0:
    print(f"last step's loss {loss.item():.4f}")

if DISTRIBUTED:
    dist.destroy_process_group()
