"""Defects ddpfix reports but does not rewrite: they need a decision only the author can make."""
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(world_size, rank):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0)
    data = torch.randn(100, 3)
    targets = torch.randn(100, 1)
    shard_x = data[rank::world_size]
    shard_y = targets[rank::world_size]
    model = DDP(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(0, len(shard_x), 10):
        loss = nn.functional.mse_loss(model(shard_x[step:step + 10]), shard_y[step:step + 10])
        if rank == 0 and step >= 50:
            break
        loss.backward()
        if rank == 0:
            optimizer.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(2,), nprocs=2)
