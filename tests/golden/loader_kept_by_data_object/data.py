"""The loaders of a small synthetic task, kept together on one object."""

import torch
from torch.utils.data import DataLoader, TensorDataset


class Data:
    def __init__(self, batch_size):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(96, 10, generator=g)
        y = (x[:, 0] + x[:, 1] > 0).long()
        self.train = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=batch_size, shuffle=True)
        self.test = DataLoader(TensorDataset(x[64:], y[64:]), batch_size=batch_size)
