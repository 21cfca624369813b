"""The entry: builds the data, the loader, the model, its optimizer and scheduler; the Learner of
learner.py keeps its own writer and log file, runs the epochs over the loader and saves."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from learner import Learner


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(96, 4)
    y = x.sum(1, keepdim=True)
    train_dataset = TensorDataset(x, y)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), drop_last=True, sampler=train_sampler)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    learner = Learner(model=model, optimizer=optimizer, scheduler=scheduler, epochs=3)
    learner.train(train_loader)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
