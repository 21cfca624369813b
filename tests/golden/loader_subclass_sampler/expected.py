"""A DataLoader subclass that shards itself when a process group is up, and a Trainer that runs the
epochs over the loader it is handed; launched with torchrun or run plain."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


class ShardedLoader(DataLoader):
    def __init__(self, dataset, batch_size):
        sampler = DistributedSampler(dataset) if dist.is_initialized() else None
        super().__init__(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


class Trainer:
    def __init__(self, model, optimizer, train_loader):
        self.model = model
        self.optimizer = optimizer
        self.train_loader = train_loader

    def train(self):
        total = 0.0
        for x, y in self.train_loader:
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            total += loss.item()
        return total

    def fit(self, epochs):
        for epoch in range(epochs):
            if isinstance(getattr(self.train_loader, "sampler", None), DistributedSampler):
                self.train_loader.sampler.set_epoch(epoch)
            self.train()


def main():
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    if dist.is_initialized():
        model = DDP(model)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = ShardedLoader(data, batch_size=8)
    Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loader).fit(3)
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
