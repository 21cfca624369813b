"""Data helpers shared by the two entry points beside them: input.py (train.py) and finetune.py."""
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return TensorDataset(x, x.sum(1, keepdim=True))


def get_loader(dataset, batch_size, shuffle=True, distributed=False):
    sampler = DistributedSampler(dataset, shuffle=shuffle) if distributed else None
    return DataLoader(dataset, batch_size=batch_size, shuffle=(sampler is None and shuffle), sampler=sampler)
