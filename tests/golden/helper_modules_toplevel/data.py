"""Synthetic regression data: a noisy linear target over six features, split into train and val."""
import torch
from torch.utils.data import DataLoader, TensorDataset


def build_loaders(batch_size, n_train=96, n_val=32):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n_train + n_val, 6, generator=g)
    w = torch.linspace(-1.0, 1.0, 6)
    y = (x @ w).unsqueeze(1) + 0.1 * torch.randn(n_train + n_val, 1, generator=g)
    train_set = TensorDataset(x[:n_train], y[:n_train])
    val_set = TensorDataset(x[n_train:], y[n_train:])
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=batch_size)
    return train_loader, val_loader
