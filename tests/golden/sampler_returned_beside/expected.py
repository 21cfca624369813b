"""A data helper returns the loader and its DistributedSampler side by side, but never joins them."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_data(distributed):
    ds = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(ds) if distributed else None
    loader = DataLoader(ds, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    return loader, sampler


def main():
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    loader, sampler = build_data(distributed)
    model = nn.Linear(8, 2)
    if distributed:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
