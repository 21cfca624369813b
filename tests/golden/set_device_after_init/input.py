"""A torchrun script that picks its device after joining the process group and after a first collective."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    distributed = int(os.environ.get("WORLD_SIZE", 1)) > 1
    if distributed:
        dist.init_process_group("gloo")
        dist.barrier()  # every rank has joined
    rank = dist.get_rank() if distributed else 0
    # one GPU per process, or the CPU
    device = torch.device(f"cuda:{local_rank}" if torch.cuda.is_available() else "cpu")
    if torch.cuda.is_available():
        torch.cuda.set_device(device)

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(96, 6), torch.randn(96, 1))
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=12, shuffle=sampler is None, sampler=sampler)
    model = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 1)).to(device)
    raw_model = model
    if distributed:
        model = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} done")
    if rank == 0:
        torch.save(raw_model.state_dict(), "set_device_after_init.pt")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
