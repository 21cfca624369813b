"""Loaders built by a helper that returns them in a dict, read back by key."""
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


def get_dataloaders(cfg):
    x = torch.randn(100, 5)
    y = (x.sum(1) > 0).long()
    datasets = {"train": TensorDataset(x[:80], y[:80]), "val": TensorDataset(x[80:], y[80:])}
    train_sampler = DistributedSampler(datasets["train"]) if DISTRIBUTED else None
    return {
        "train": DataLoader(datasets["train"], batch_size=cfg["batch_size"], shuffle=(train_sampler is None), sampler=train_sampler),
        "val": DataLoader(datasets["val"], batch_size=cfg["batch_size"]),
    }


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    cfg = {"batch_size": 10, "epochs": 2, "lr": 0.1}
    torch.manual_seed(0)
    loaders = get_dataloaders(cfg)
    model = nn.Linear(5, 2)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        if isinstance(loaders["train"].sampler, DistributedSampler):
            loaders["train"].sampler.set_epoch(epoch)
        for xb, yb in loaders["train"]:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        with torch.no_grad():
            hits = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in loaders["val"])
        if RANK == 0:
            print(f"epoch {epoch}: val hits {hits}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
