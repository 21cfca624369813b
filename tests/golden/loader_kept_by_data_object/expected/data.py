"""The loaders of a small synthetic task, kept together on one object."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Data:
    def __init__(self, batch_size):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(96, 10, generator=g)
        y = (x[:, 0] + x[:, 1] > 0).long()
        dataset = TensorDataset(x[:64], y[:64])
        sampler = DistributedSampler(dataset) if dist.is_initialized() else None
        self.train = DataLoader(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)
        self.test = DataLoader(TensorDataset(x[64:], y[64:]), batch_size=batch_size)
