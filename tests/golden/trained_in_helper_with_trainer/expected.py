import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainer import Train


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def load_dataset():
    # a fixed synthetic dataset: the same on every run
    gen = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8, generator=gen), torch.randint(0, 3, (64,), generator=gen))
    train_sampler = DistributedSampler(ds) if DISTRIBUTED else None
    return DataLoader(ds, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)


def train(train_loader):
    model = nn.Linear(8, 3)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    trainer = Train(model, train_loader, optimizer, criterion)
    for epoch in range(3):
        if isinstance(train_loader.sampler, DistributedSampler):
            train_loader.sampler.set_epoch(epoch)
        epoch_loss = trainer.run_epoch()
        if RANK == 0:
            print(f"epoch {epoch}: loss {epoch_loss:.4f}")
    return raw_model


def test(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for inputs, labels in loader:
            correct += (model(inputs).argmax(1) == labels).sum().item()
    return correct


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    train_loader = load_dataset()
    model = train(train_loader)  # trains and hands back the model
    # an optimizer built only to restore a checkpoint into: nothing is trained here
    optimizer = optim.Adam(model.parameters())
    test(model, train_loader)

    if DISTRIBUTED:
        dist.destroy_process_group()
