"""The loaders: a training set of made-up points and a small test set."""
import torch
import torch.utils.data as data_utils
from torch.utils.data.distributed import DistributedSampler


def get_data_loader(args, distributed=False):
    g = torch.Generator().manual_seed(0)
    train_dataset = data_utils.TensorDataset(torch.randn(96, 4, generator=g) + 2.0)
    test_dataset = data_utils.TensorDataset(torch.randn(16, 4, generator=g) + 2.0)
    train_sampler = DistributedSampler(train_dataset) if distributed else None
    train_dataloader = data_utils.DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
    test_dataloader = data_utils.DataLoader(test_dataset, batch_size=args.batch_size, shuffle=True)
    return train_dataloader, test_dataloader
