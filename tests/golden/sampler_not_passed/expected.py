"""Half converted: the process group and the samplers exist, but the training loader never gets its sampler."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
SEED = 1234


def main():
    if WORLD_SIZE > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(SEED + RANK)  # per-rank augmentation noise is fine
    train_ds = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    val_ds = TensorDataset(torch.randn(16, 3), torch.randn(16, 1))
    # each rank should see its own shard
    train_sampler = DistributedSampler(train_ds, seed=SEED) if WORLD_SIZE > 1 else None
    val_sampler = DistributedSampler(val_ds, shuffle=False, seed=SEED) if WORLD_SIZE > 1 else None
    train_loader = DataLoader(train_ds, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(val_ds, batch_size=8, sampler=val_sampler)

    model = nn.Linear(3, 1)
    if WORLD_SIZE > 1:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        model.train()
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            batches = [nn.functional.mse_loss(model(xb), yb).item() for xb, yb in val_loader]
        if RANK == 0:
            print(f"epoch {epoch} val batches {len(batches)}")
    if WORLD_SIZE > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
