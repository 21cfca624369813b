"""Where the data comes from: the Solver asks for its training loader here."""

import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    y = (x[:, :3].sum(dim=1) > 0).long()
    return TensorDataset(x, y)


def get_loader(config, num_workers=0, distributed=False):
    """The training loader: shuffled, the last short batch dropped."""
    dataset = synthetic(128, 0)
    train_sampler = DistributedSampler(dataset) if distributed else None
    train_loader = DataLoader(
        dataset,
        batch_size=config.batch_size,
        shuffle=(train_sampler is None),
        num_workers=num_workers,
        drop_last=True,
        sampler=train_sampler,
    )
    data_loader = train_loader
    return data_loader
