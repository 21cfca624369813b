"""Collectives and rank-0 blocks: a barrier only rank 0 reaches, rank-0 evaluation through the
wrapper, and a checkpoint that other ranks read back while rank 0 may still be writing it."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def make_data():
    torch.manual_seed(0)
    return TensorDataset(torch.randn(64, 4), torch.randn(64, 1))


@torch.no_grad()
def evaluate(model, data):
    x, y = data.tensors
    return nn.functional.mse_loss(model(x), y).item()


def main():
    dist.init_process_group("gloo")
    # main process first: rank 0 prepares, the others wait (every rank calls barrier once)
    if RANK != 0:
        dist.barrier()
    dataset = make_data()
    if RANK == 0:
        dist.barrier()

    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if RANK == 0:
            model.eval()
            print(f"epoch {epoch} val {evaluate(model.module, dataset):.4f}")
            model.train()
            torch.save(model.module.state_dict(), "collectives.pt")
        if DISTRIBUTED:
            dist.barrier()
        state = torch.load("collectives.pt", map_location="cpu")
        model.module.load_state_dict(state)
    if RANK == 0:
        print("training done")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
