"""Keeps the weights of the best validation epoch and restores them for the final test."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from checkpoints import load_weights, save_checkpoint


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def make_split(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 5, generator=g)
    return TensorDataset(x, (x[:, :2].sum(1) > 0).long())


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    correct = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in loader)
    model.train()
    return correct / len(loader.dataset)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_dataset = make_split(128, 1)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=16, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(make_split(48, 2), batch_size=16)
    test_loader = DataLoader(make_split(48, 3), batch_size=16)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 2))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    best = -1.0
    for epoch in range(4):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        acc = evaluate(model, val_loader)
        if RANK == 0:
            print(f"epoch {epoch}: val acc {acc:.3f}")
        if acc > best:
            best = acc
            save_checkpoint(raw_model, "best.pt")
    if DISTRIBUTED:
        dist.barrier()
    load_weights(raw_model, "best.pt")
    if RANK == 0:
        print(f"best val acc {best:.3f}, test acc {evaluate(raw_model, test_loader):.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
