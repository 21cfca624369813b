"""Classifier on a toy set: the model and its loss come from set_model(), the optimizer from a helper
of train_utils.py, and several GPUs share one batch through DataParallel."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from train_utils import save_model, set_optimizer


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def set_loader(batch_size):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = (x.sum(dim=1) > 0).long()
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


def set_model():
    model = Net()
    criterion = nn.CrossEntropyLoss()
    if torch.cuda.is_available():
        if torch.cuda.device_count() > 1 and not DISTRIBUTED:
            model = nn.DataParallel(model)  # one batch split over the GPUs
        model = model.cuda()
        criterion = criterion.cuda()
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    return model, criterion


def train(loader, model, criterion, optimizer):
    model.train()
    for x, y in loader:
        if torch.cuda.is_available():
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = set_loader(args.batch_size)
    model, criterion = set_model()
    optimizer = set_optimizer(model, lr=0.1)
    for epoch in range(args.epochs):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        train(loader, model, criterion, optimizer)
    save_model(model, optimizer, "last.pth")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
