"""Sharpness-aware training: each step takes the gradient at a point pushed uphill by rho."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler

from data import Data


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def climb(model, rho):
    """Move every weight rho uphill along the normalised gradient; return the moves."""
    norm = torch.norm(torch.stack([p.grad.norm() for p in model.parameters() if p.grad is not None]))
    moves = []
    with torch.no_grad():
        for p in model.parameters():
            e = rho * p.grad / (norm + 1e-12)
            p.add_(e)
            moves.append(e)
    return moves


def descend(model, moves):
    with torch.no_grad():
        for p, e in zip(model.parameters(), moves):
            p.sub_(e)


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--rho", type=float, default=0.05)
    args = parser.parse_args()

    torch.manual_seed(0)
    data = Data(args.batch_size)
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    for epoch in range(args.epochs):
        if isinstance(getattr(data.train, "sampler", None), DistributedSampler):
            data.train.sampler.set_epoch(epoch)
        model.train()
        for x, y in data.train:
            F.cross_entropy(model(x), y).backward()  # the gradient here...
            moves = climb(model, args.rho)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()  # ...and the one uphill, which the step follows
            descend(model, moves)
            optimizer.step()
            optimizer.zero_grad()

        model.eval()
        correct = 0
        with torch.no_grad():
            for x, y in data.test:
                correct += (model(x).argmax(1) == y).sum().item()
        if RANK == 0:
            print(f"epoch {epoch} test accuracy {correct / len(data.test.dataset):.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()
