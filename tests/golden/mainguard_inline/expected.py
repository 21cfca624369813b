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

if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_dataset = TensorDataset(torch.randn(40, 2), torch.randn(40, 1))
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=5, shuffle=(train_sampler is None), sampler=train_sampler)
    model = nn.Linear(2, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if RANK == 0:
            print("epoch", epoch, "done")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "inline.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()
