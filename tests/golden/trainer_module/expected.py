"""The entry: builds the model, optimizer and loader; the Trainer of trainer.py trains, saves and logs."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainer import Trainer


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(72, 4)
    y = x.mean(1, keepdim=True)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=9, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(model, optimizer)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        loss = trainer.train_epoch(loader)
        trainer.log(epoch, loss)
        trainer.save()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
