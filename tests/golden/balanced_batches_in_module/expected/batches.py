"""Batches mixed from several datasets: a fixed share of every batch from each."""

import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def make_dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(n, 8, generator=g), torch.randint(0, 4, (n,), generator=g))


class BalancedBatches:
    def __init__(self, sizes, batch_size, log_path):
        log = open(log_path, "a") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "a")
        self.loaders = []
        self.iters = []
        for i, (n, share) in enumerate(sizes):
            dataset = make_dataset(n, seed=i)
            part = max(round(batch_size * share), 1)
            log.write(f"dataset {i}: {n} samples, {part} per batch\n")
            sampler = DistributedSampler(dataset) if dist.is_initialized() else None
            loader = DataLoader(dataset, batch_size=part, shuffle=(sampler is None), drop_last=True, sampler=sampler)
            self.loaders.append(loader)
            self.iters.append(iter(loader))
        log.close()

    def get_batch(self):
        xs, ys = [], []
        for i, it in enumerate(self.iters):
            try:
                x, y = next(it)
            except StopIteration:  # this dataset is used up: start it again
                if isinstance(getattr(self.loaders[i], "sampler", None), DistributedSampler):
                    self.loaders[i].sampler.set_epoch(self.loaders[i].sampler.epoch + 1)
                self.iters[i] = iter(self.loaders[i])
                x, y = next(self.iters[i])
            xs.append(x)
            ys.append(y)
        return torch.cat(xs), torch.cat(ys)
