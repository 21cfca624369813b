"""Correct DDP whose training step calls `model.forward(x)` on the wrapper instead of `model(x)`:
DistributedDataParallel.forward prepares the gradient all-reduce itself, so every check passes. The
model's own forward calls `.forward` of a submodule too; the batches are cut by hand per rank (no
DataLoader), so `shards` judges the inputs the forwards got. With `--no-ddp` the wrap is left out
(every rank trains its own copy): `ddp` fails."""

import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
BATCH = 8


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out.forward(self.hidden.forward(x))


def train_step(model, optimizer, x, y):
    model.train()
    optimizer.zero_grad()
    loss = F.mse_loss(model.forward(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    x_all, y_all = torch.randn(64, 4), torch.randn(64, 1)
    model = Net()
    if "--no-ddp" not in sys.argv:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for start in range(RANK * BATCH, len(x_all), WORLD_SIZE * BATCH):
            loss = train_step(model, optimizer, x_all[start : start + BATCH], y_all[start : start + BATCH])
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss:.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
