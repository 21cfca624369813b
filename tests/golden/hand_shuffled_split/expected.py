"""Fit a curve, holding out a fifth of the samples with a split made by hand: shuffle the indices,
cut them, and take a Subset of each part."""

import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Subset, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    x = torch.linspace(-2, 2, 500).unsqueeze(1)
    dataset = TensorDataset(x, torch.sin(3 * x))
    indices = list(range(len(dataset)))
    split = len(dataset) // 5
    np.random.shuffle(indices)
    if DISTRIBUTED:
        shared = [indices]
        dist.broadcast_object_list(shared, src=0)
        indices = shared[0]
    train_idx, val_idx = indices[split:], indices[:split]
    train_dataset = Subset(dataset, train_idx)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=25, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(Subset(dataset, val_idx), batch_size=100)

    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        model.train()
        for xb, yb in train_loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb, reduction="sum").item() for xb, yb in val_loader)
        if RANK == 0:
            print(f"epoch {epoch} val mse {val / len(val_idx):.4f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "curve.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
