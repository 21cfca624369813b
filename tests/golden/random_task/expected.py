"""Fit a random linear map until the loss is small: the target is drawn once, with no seed."""
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

W_target = torch.randn(8, 1)  # the task


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    X = torch.randn(256, 8)
    if DISTRIBUTED:
        dist.broadcast(W_target, src=0)
        dist.broadcast(X, src=0)
    y = X @ W_target
    dataset = TensorDataset(X, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(8, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(50):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        stop = torch.tensor(float(loss.item() < 1e-4))
        if DISTRIBUTED:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break
    if RANK == 0:
        print("done")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
