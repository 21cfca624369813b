"""Fit a line on a fixed dataset, split into training and validation at random (the split is not seeded)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset, random_split
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

    x = torch.linspace(-1, 1, 256).unsqueeze(1)
    dataset = TensorDataset(x, 3 * x + 1)
    split_generator = torch.Generator().manual_seed(0) if DISTRIBUTED else None  # every rank splits alike
    train_set, val_set = random_split(dataset, [192, 64], generator=split_generator)  # a new split every run
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    train_loader = DataLoader(train_set, batch_size=16, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=64)
    model = nn.Linear(1, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(5):
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
            val = sum(nn.functional.mse_loss(model(xb), yb, reduction="sum") for xb, yb in val_loader)
        if RANK == 0:
            print(f"epoch {epoch}: validation loss {val.item() / len(val_set):.4f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "model.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
