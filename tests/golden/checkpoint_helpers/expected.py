"""Single-process training with checkpoint helpers: a save that keeps a copy of the best one, an
atomic save through a temporary file, and the best weights read back for a last evaluation."""
import os
import shutil

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


def save_checkpoint(state, is_best, filename="helpers_last.pt"):
    if RANK == 0:
        torch.save(state, filename)
        if is_best:
            shutil.copyfile(filename, "helpers_best.pt")


def save_atomically(state, path):
    tmp = path + ".tmp"
    if RANK == 0:
        torch.save(state, tmp)
        os.replace(tmp, path)


@torch.no_grad()
def evaluate(model, x, y):
    return nn.functional.mse_loss(model(x), y).item()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(80, 3)
    y = x.sum(dim=1, keepdim=True)
    dataset = TensorDataset(x[:64], y[:64])
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(3, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    best = float("inf")
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        val = evaluate(model, x[64:], y[64:])
        is_best = val < best
        best = min(val, best)
        save_checkpoint({"model": raw_model.state_dict(), "epoch": epoch}, is_best)
        save_atomically(optimizer.state_dict(), "helpers_optim.pt")
    if DISTRIBUTED:
        dist.barrier()
    state = torch.load("helpers_best.pt", map_location="cpu")
    raw_model.load_state_dict(state["model"])
    val = evaluate(model, x[64:], y[64:])
    if RANK == 0:
        print(f"best epoch {state['epoch']}: val {val:.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
