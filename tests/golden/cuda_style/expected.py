"""Old-style script: .cuda() calls, guarded so it also runs on a CPU-only machine."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

use_cuda = torch.cuda.is_available()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        if use_cuda:
            data, target = data.cuda(LOCAL_RANK), target.cuda(LOCAL_RANK)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
            if RANK == 0:
                print('Train Epoch: {} [{}]\tLoss: {:.6f}'.format(epoch, batch_idx, loss.item()))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(3)
    dataset = TensorDataset(torch.randn(160, 12), torch.randint(0, 2, (160,)))
    sampler = DistributedSampler(dataset, shuffle=False) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=16, shuffle=False, sampler=sampler)
    model = Net()
    if use_cuda:
        model.cuda(LOCAL_RANK)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(1, 3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train(model, loader, optimizer, epoch)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == '__main__':
    main()
