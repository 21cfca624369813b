"""Model, data and optimizer are globals; train() and evaluate() read them; __main__ runs the epochs."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(3)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_set = TensorDataset(torch.randn(120, 4), torch.randint(0, 3, (120,)))
test_set = TensorDataset(torch.randn(30, 4), torch.randint(0, 3, (30,)))
train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
train_loader = DataLoader(train_set, batch_size=10, shuffle=(train_sampler is None), sampler=train_sampler)
test_loader = DataLoader(test_set, batch_size=10)

model = nn.Linear(4, 3).to(device)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train(epoch):
    model.train()
    for data, target in train_loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"train epoch {epoch}: loss {loss.item():.4f}")


def evaluate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            correct += (model(data).argmax(dim=1) == target).sum().item()
    if RANK == 0:
        print(f"test accuracy {correct}/{len(test_set)}")


if __name__ == "__main__":
    for epoch in range(1, 3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        train(epoch)
        evaluate()

if DISTRIBUTED:
    dist.destroy_process_group()
