"""The data side of the training script beside it."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loaders(batch_size):
    x = torch.randn(90, 4)
    y = x.mean(1, keepdim=True)
    train_loader = DataLoader(TensorDataset(x[:72], y[:72]), batch_size=batch_size, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[72:], y[72:]), batch_size=batch_size)
    return train_loader, val_loader
