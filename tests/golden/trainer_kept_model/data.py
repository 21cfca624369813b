"""The loaders, built from a synthetic regression task."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loaders(batch_size=16):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(96, 4, generator=g)
    y = x.sum(1, keepdim=True)
    train = TensorDataset(x[:64], y[:64])
    val = TensorDataset(x[64:], y[64:])
    train_loader = DataLoader(train, batch_size=batch_size, shuffle=True)
    val_loader = DataLoader(val, batch_size=batch_size)
    return train_loader, val_loader
