"""Distributed helpers shared by the training scripts beside it."""
import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler


def make_sampler(dataset, shuffle=True):
    """A DistributedSampler when a process group is up, else None (the loader's own order)."""
    if dist.is_available() and dist.is_initialized():
        return DistributedSampler(dataset, shuffle=shuffle)
    return None
