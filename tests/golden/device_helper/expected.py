"""A torchrun script whose helpers pick the GPU by the process group's (global) rank."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from devices import data_device


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


def get_device():
    if torch.cuda.is_available():
        rank = dist.get_rank() if dist.is_initialized() else 0
        return torch.device(f"cuda:{LOCAL_RANK}")
    return torch.device("cpu")


def main():
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        if torch.cuda.is_available():
            torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        dist.init_process_group("gloo")
    device = get_device()
    batch_device = data_device()
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(48, 3), torch.randn(48, 1))
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=6, shuffle=sampler is None, sampler=sampler)
    model = nn.Linear(3, 1).to(device)
    if distributed:
        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(batch_device), yb.to(batch_device)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb.to(device)), yb.to(device)).backward()
            optimizer.step()
    if not distributed or dist.get_rank() == 0:
        print("trained on", device)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
