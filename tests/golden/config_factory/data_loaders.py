"""Data loaders a config names by class."""
import torch
from torch.utils.data import DataLoader, TensorDataset


class RegressionDataLoader(DataLoader):
    """A noisy linear target over `in_features` inputs."""

    def __init__(self, n_samples, batch_size, shuffle=True, in_features=6, seed=0):
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n_samples, in_features, generator=g)
        y = x @ torch.linspace(-1.0, 1.0, in_features) + 0.1 * torch.randn(n_samples, generator=g)
        super().__init__(TensorDataset(x, y.unsqueeze(1)), batch_size=batch_size, shuffle=shuffle)
