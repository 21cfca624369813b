"""Half converted: the process group and the wrap exist, the sampler and set_device do not."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset

WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))


def main():
    if WORLD_SIZE > 1:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(64, 3), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    if WORLD_SIZE > 1:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
    if WORLD_SIZE > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
