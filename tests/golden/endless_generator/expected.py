"""Trains by step count over an endless generator that restarts the loader when it runs out."""
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


def inf_generator(iterable):
    """Allows training with DataLoaders in a single infinite loop."""
    epoch = 0
    if isinstance(getattr(iterable, "sampler", None), DistributedSampler):
        iterable.sampler.set_epoch(epoch)
    iterator = iterable.__iter__()
    while True:
        try:
            yield iterator.__next__()
        except StopIteration:
            epoch += 1
            if isinstance(getattr(iterable, "sampler", None), DistributedSampler):
                iterable.sampler.set_epoch(epoch)
            iterator = iterable.__iter__()


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)
    train_dataset = TensorDataset(x, y)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    data_gen = inf_generator(train_loader)
    batches_per_epoch = len(train_loader)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for itr in range(3 * batches_per_epoch):
        optimizer.zero_grad()
        xb, yb = data_gen.__next__()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        if itr % batches_per_epoch == 0:
            if RANK == 0:
                print(f"epoch {itr // batches_per_epoch}: loss {loss.item():.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()
