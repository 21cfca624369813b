"""The loaders: a training set of made-up points and a small test set."""
import torch
import torch.utils.data as data_utils


def get_data_loader(args):
    g = torch.Generator().manual_seed(0)
    train_dataset = data_utils.TensorDataset(torch.randn(96, 4, generator=g) + 2.0)
    test_dataset = data_utils.TensorDataset(torch.randn(16, 4, generator=g) + 2.0)
    train_dataloader = data_utils.DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True)
    test_dataloader = data_utils.DataLoader(test_dataset, batch_size=args.batch_size, shuffle=True)
    return train_dataloader, test_dataloader
