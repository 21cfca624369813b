"""A loader that keeps a slot for a sampler the single-GPU script never fills."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def set_loader(batch_size):
    train_dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    train_sampler = None  # a DistributedSampler, one day
    train_loader = DataLoader(
        train_dataset, batch_size=batch_size, shuffle=(train_sampler is None), sampler=train_sampler
    )
    return train_loader


def main():
    torch.manual_seed(0)
    train_loader = set_loader(8)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for x, y in train_loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
