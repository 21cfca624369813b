"""Half converted: the sampler is passed, but shuffle can still arrive through the loader's dict."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
RANK = int(os.environ.get("RANK", 0))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--shuffle", action="store_true")
    args = parser.parse_args()
    if DISTRIBUTED:
        dist.init_process_group("gloo")
    torch.manual_seed(0)

    train_kwargs = {"batch_size": 8}
    if args.shuffle:
        train_kwargs.update({"shuffle": True, "drop_last": True})
    train_set = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    if train_sampler is not None:
        train_kwargs.pop("shuffle", None)  # the sampler shuffles
    train_loader = DataLoader(train_set, sampler=train_sampler, **train_kwargs)

    model = nn.Linear(3, 1)
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {nn.functional.mse_loss(getattr(model, 'module', model)(xb), yb).item():.4f}")
    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
