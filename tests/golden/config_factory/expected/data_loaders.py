"""Data loaders a config names by class."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class RegressionDataLoader(DataLoader):
    """A noisy linear target over `in_features` inputs."""

    def __init__(self, n_samples, batch_size, shuffle=True, in_features=6, seed=0):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n_samples, in_features, generator=g)
        y = x @ torch.linspace(-1.0, 1.0, in_features) + 0.1 * torch.randn(n_samples, generator=g)
        dataset = TensorDataset(x, y.unsqueeze(1))
        sampler = DistributedSampler(dataset, shuffle=shuffle) if dist.is_initialized() else None
        super().__init__(dataset, batch_size=batch_size, shuffle=(sampler is None and shuffle), sampler=sampler)
