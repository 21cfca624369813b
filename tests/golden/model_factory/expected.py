"""A classifier from the project's factory, then a small head trained on its outputs."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from factory import build


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def make_head(device):
    head = nn.Linear(2, 1).to(device)
    return {"model": head, "optimizer": torch.optim.Adam(head.parameters(), lr=0.01)}


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(120, 6)
    labels, targets = (x[:, 0] > 0).long(), x[:, :1].clone()
    dataset = TensorDataset(x, labels, targets)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=20, shuffle=(sampler is None), sampler=sampler)

    model, optimizer = build(hidden=16, device=device)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb, _ in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"classifier epoch {epoch} loss {loss.item():.4f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "classifier.pt")

    parts = make_head(device)
    head, head_optimizer = parts["model"], parts["optimizer"]
    if DISTRIBUTED:
        head = DDP(head, device_ids=[LOCAL_RANK] if next(head.parameters()).is_cuda else None)
    xs, ts = x.to(device), targets.to(device)
    for step in range(5):
        with torch.no_grad():
            logits = model(xs)
        head_optimizer.zero_grad()
        loss = F.mse_loss(head(logits), ts)
        loss.backward()
        head_optimizer.step()
    if RANK == 0:
        print(f"head loss {loss.item():.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
