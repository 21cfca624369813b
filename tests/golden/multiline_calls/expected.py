"""Calls written one argument per line, with comments: inserted keywords follow their layout."""
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


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(48, 4), torch.randn(48, 1))
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    train_loader = DataLoader(
        train_set,
        batch_size=8,
        shuffle=(train_sampler is None),  # a new order every epoch
        sampler=train_sampler,
    )
    model = nn.Linear(4, 1)
    if RANK == 0:
        torch.save(model.state_dict(), "init.pt")
    if DISTRIBUTED:
        dist.barrier()
    model.load_state_dict(
        torch.load(
            "init.pt",
            weights_only=True,  # tensors only
            map_location="cpu"
        )
    )
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(),
                                lr=0.05)
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch} done")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
