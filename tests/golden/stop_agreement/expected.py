"""Single-process training that decides on its own when to stop: a step skipped when the loss is
not finite, early stopping on the validation loss, and a target for the training loss."""
import math
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

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(128, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(128, 1)
    train_dataset = TensorDataset(x[:96], y[:96])
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    val_x, val_y = x[96:].to(device), y[96:].to(device)
    model = nn.Linear(4, 1).to(device)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    best, bad_epochs, patience = math.inf, 0, 3
    for epoch in range(100):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            skip = torch.tensor(float(not torch.isfinite(loss)), device=device)
            if DISTRIBUTED:
                dist.all_reduce(skip, op=dist.ReduceOp.MAX)
            if skip.item():
                continue  # a diverged step is skipped, not applied
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_loss = nn.functional.mse_loss(model(val_x), val_y).item()
        if val_loss < best - 1e-4:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        stop = torch.tensor(float(bad_epochs >= patience), device=device)
        if DISTRIBUTED:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            if RANK == 0:
                print(f"no improvement for {patience} epochs")
            break
        stop = torch.tensor(float(loss.item() < 0.02), device=device)
        if DISTRIBUTED:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            if RANK == 0:
                print("loss target reached")
            break
    if RANK == 0:
        print(f"stopped at epoch {epoch}, best val {best:.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
