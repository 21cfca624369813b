"""A torchrun script with launch mix-ups: literal NCCL, rank/world_size by hand, local vs global rank."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


def main():
    rank = int(os.environ.get("RANK", 0))
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    distributed = world_size > 1
    if distributed:
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
    if torch.cuda.is_available():
        torch.cuda.set_device(local_rank)

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=8, sampler=sampler, shuffle=sampler is None)
    model = nn.Linear(3, 1)
    raw_model = model
    if distributed:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in tqdm(loader, desc=f"epoch {epoch}", disable=rank != 0):
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if rank == 0:
            torch.save(raw_model.state_dict(), "mixups.pt")
            print("saved epoch", epoch)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
