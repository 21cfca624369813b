"""A loader that keeps a slot for a sampler the single-GPU script never fills."""
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


def set_loader(batch_size):
    train_dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None  # a DistributedSampler, one day
    train_loader = DataLoader(
        train_dataset, batch_size=batch_size, shuffle=(train_sampler is None), sampler=train_sampler
    )
    return train_loader


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_loader = set_loader(8)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if DISTRIBUTED:
            train_loader.sampler.set_epoch(epoch)
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
