"""Loader arguments collected in dicts; shuffle is only in them on some paths (CUDA, --shuffle)."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def train(model, device, loader, optimizer, epoch):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch}: last loss {loss.item():.4f}")


@torch.no_grad()
def test(model, device, loader):
    model.eval()
    correct = 0
    for data, target in loader:
        correct += (model(data.to(device)).argmax(1) == target.to(device)).sum().item()
    if RANK == 0:
        print(f"test accuracy {correct / len(loader.dataset):.3f}")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--test-batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--shuffle", action="store_true")
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available()
    torch.manual_seed(1)
    device = torch.device("cuda" if use_cuda else "cpu")

    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = dict(batch_size=args.test_batch_size)
    if use_cuda:
        cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs = {**test_kwargs, **cuda_kwargs}
    if args.shuffle:
        train_kwargs["shuffle"] = True

    x = torch.randn(160, 8)
    y = (x[:, 0] > 0).long()
    train_set = TensorDataset(x[:120], y[:120])
    test_set = TensorDataset(x[120:], y[120:])
    if DISTRIBUTED:
        train_kwargs["sampler"] = DistributedSampler(train_set, shuffle=train_kwargs.pop("shuffle", False))
    train_loader = DataLoader(train_set, **train_kwargs)
    test_loader = DataLoader(test_set, **test_kwargs)

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, args.epochs + 1):
        if DISTRIBUTED:
            train_loader.sampler.set_epoch(epoch)
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
