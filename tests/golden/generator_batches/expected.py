"""Trains for a number of steps on batches an endless generator draws from a DataLoader; a new
shuffled pass starts whenever the last one runs out."""

import argparse
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


def make_dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 6, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1) + 0.1 * torch.randn(48, 1, generator=g)
    return TensorDataset(x, y)


def sample_data(dataset, batch_size):
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, shuffle=(sampler is None), batch_size=batch_size, drop_last=True, sampler=sampler)
    epoch = 0
    if isinstance(getattr(loader, "sampler", None), DistributedSampler):
        loader.sampler.set_epoch(epoch)
    loader = iter(loader)

    while True:
        try:
            yield next(loader)

        except StopIteration:
            # out of batches: start a fresh pass
            dist_sampler = DistributedSampler(dataset) if DISTRIBUTED else None
            loader = DataLoader(dataset, shuffle=(dist_sampler is None), batch_size=batch_size, drop_last=True, sampler=dist_sampler)
            epoch += 1
            if isinstance(getattr(loader, "sampler", None), DistributedSampler):
                loader.sampler.set_epoch(epoch)
            loader = iter(loader)
            yield next(loader)


def train(args, model, optimizer):
    batches = iter(sample_data(make_dataset(), args.batch))
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        x, y = next(batches)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            if RANK == 0:
                print(f"step {step}: loss {loss.item():.4f}")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train(args, model, optimizer)
    if RANK == 0:
        torch.save(raw_model.state_dict(), "model.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
