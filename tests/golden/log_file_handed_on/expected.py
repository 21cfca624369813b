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


def train(epoch, model, loader, optimizer, log):
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    log.write(f"{epoch},{total:.6f}\n")
    log.flush()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=4, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train_log = open("train.csv", "w") if RANK == 0 else open(os.devnull, "w")
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train(epoch, model, loader, optimizer, train_log)
    train_log.close()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
