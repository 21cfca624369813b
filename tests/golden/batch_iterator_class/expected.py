import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from batches import BatchIterator


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def train(batches, model, optimizer, epoch):
    total = 0.0
    for i, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    if RANK == 0:
        print(f"epoch {epoch}: mean batch loss {total / len(batches):.4f}")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    inputs, targets = torch.randn(64, 8), torch.randn(64, 1)
    train_batches = BatchIterator(inputs, targets, batch_size=8)
    model = nn.Linear(8, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        train(train_batches, model, optimizer, epoch)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
