"""The script already uses the names ddpfix would introduce, for other things."""
import os

import torch
import torch.distributed as torch_dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

RANK = "top-k"  # a ranking metric, not a process rank
dist = torch.distributions.Normal(0.0, 1.0)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        torch_dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    sampler = "uniform"
    raw_model = None
    noise = dist.sample((64, 3))
    dataset = TensorDataset(noise, torch.randn(64, 1))
    dist_sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(dist_sampler is None), sampler=dist_sampler)
    model = nn.Linear(3, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if dist_sampler is not None:
            dist_sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        print(RANK, sampler, raw_model, epoch)

    if DISTRIBUTED:
        torch_dist.destroy_process_group()


if __name__ == "__main__":
    main()
