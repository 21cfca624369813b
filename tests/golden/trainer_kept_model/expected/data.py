"""The loaders, built from a synthetic regression task."""
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def build_loaders(batch_size=16, distributed=False):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(96, 4, generator=g)
    y = x.sum(1, keepdim=True)
    train = TensorDataset(x[:64], y[:64])
    val = TensorDataset(x[64:], y[64:])
    train_sampler = DistributedSampler(train) if distributed else None
    train_loader = DataLoader(train, batch_size=batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(val, batch_size=batch_size)
    return train_loader, val_loader
