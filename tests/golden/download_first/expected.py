"""Training data fetched before training, on what will be every rank (a file:// address of the
points.csv beside this script stands in for a web address)."""
import os
import urllib.request
from pathlib import Path

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

SOURCE = (Path(__file__).resolve().parent / "points.csv").as_uri()


def load_points(path):
    rows = [line.split(",") for line in Path(path).read_text().splitlines() if line]
    table = torch.tensor([[float(v) for v in row] for row in rows])
    return TensorDataset(table[:, :3], table[:, 3:])


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    os.makedirs("data", exist_ok=True)
    path = os.path.join("data", "points.csv")
    # fetch once; later runs find it on disk
    if DISTRIBUTED and LOCAL_RANK != 0:
        dist.barrier()  # the other ranks wait while local rank 0 downloads
    if not os.path.exists(path):
        urllib.request.urlretrieve(SOURCE, path)
    if DISTRIBUTED and LOCAL_RANK == 0:
        dist.barrier()
    dataset = load_points(path)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)

    model = nn.Linear(3, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
