"""Joins and leaves its process group through the project's own helpers."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import distributed_utils as du


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


def main():
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    du.init_distributed()
    torch.manual_seed(1)
    dataset = TensorDataset(torch.randn(80, 5), torch.randint(0, 2, (80,)))
    sampler = DistributedSampler(dataset) if dist.is_initialized() else None
    loader = DataLoader(dataset, batch_size=10, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(5, 2)
    raw_model = model
    if dist.is_initialized():
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    if du.is_main_process():
        torch.save(raw_model.state_dict(), "helper_module_launch.pt")
    du.cleanup()


if __name__ == "__main__":
    main()
