"""Broken: the data is split into training and validation by random_split with no seed, so each rank
splits it its own way: the DistributedSampler shards positions of a different Subset on each rank, the
ranks train on overlapping samples and each trains on some the other holds out (`shards` fails)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, random_split
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))


def main():
    dist.init_process_group("gloo")
    x = torch.linspace(-1, 1, 64).unsqueeze(1)
    data = TensorDataset(x, 2 * x)
    train_set, val_set = random_split(data, [48, 16])
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=8, sampler=sampler)
    model = DDP(nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
