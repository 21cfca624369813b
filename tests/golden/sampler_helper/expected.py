"""Half converted: a helper in dist_utils.py builds the sampler, but the loader never receives it."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

from dist_utils import make_sampler

WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


def main():
    if WORLD_SIZE > 1:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(60, 4), torch.randn(60, 1))
    train_sampler = make_sampler(train_set)
    train_loader = DataLoader(train_set, batch_size=6, shuffle=(train_sampler is None), sampler=train_sampler)

    model = nn.Linear(4, 1)
    if WORLD_SIZE > 1:
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
            print(f"epoch {epoch} done")
    if WORLD_SIZE > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
