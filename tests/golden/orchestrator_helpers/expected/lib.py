"""What the entry point puts together: the model, its optimizer, the data and the training loop."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))


def build_optimizer(model, lr=0.05):
    return torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def build_loader(batch_size=8, distributed=False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(64, 4, generator=g)
    y = x.pow(2).sum(dim=1, keepdim=True)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if distributed else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


def train(model, optimizer, loader, epochs):
    for epoch in range(epochs):
        if isinstance(getattr(loader, "sampler", None), DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if not dist.is_initialized() or dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
