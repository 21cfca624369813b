"""Fits a regression with a loss module of its own whose scale is learnt beside the model; the
optimizer is given both modules' parameters."""

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


class ScaledMSELoss(nn.Module):
    """Mean squared error times a learnt scale (none when `learn` is off)."""

    def __init__(self, learn=True):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(1)) if learn else None

    def forward(self, out, target):
        loss = (out - target).pow(2).mean()
        if self.log_scale is None:
            return loss
        return loss * self.log_scale.exp() - self.log_scale


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = x.sum(dim=1, keepdim=True)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)

    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    criterion = ScaledMSELoss(learn=True)
    raw_criterion = criterion
    if DISTRIBUTED and any(p.requires_grad for p in criterion.parameters()):
        criterion = DDP(criterion, device_ids=[LOCAL_RANK] if next(criterion.parameters()).is_cuda else None)
    params = list(model.parameters()) + list(criterion.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)

    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: scale {raw_criterion.log_scale.exp().item():.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
