"""Broken: only `model.features` is wrapped in DDP while the optimizer trains the whole model; the
classifier trains on each rank's own shard and drifts apart (`params` fails)."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
        self.classifier = nn.Linear(8, 1)

    def forward(self, x):
        return self.classifier(self.features(x))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=8, sampler=sampler)
    model = Net()
    model.features = DDP(model.features)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
            torch.save(model.state_dict(), "checkpoint.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
