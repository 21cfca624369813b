"""Trains for a number of steps on batches an endless generator draws from a DataLoader; a new
shuffled pass starts whenever the last one runs out."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(48, 6, generator=g)
    y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1) + 0.1 * torch.randn(48, 1, generator=g)
    return TensorDataset(x, y)


def sample_data(dataset, batch_size):
    loader = DataLoader(dataset, shuffle=True, batch_size=batch_size, drop_last=True)
    loader = iter(loader)

    while True:
        try:
            yield next(loader)

        except StopIteration:
            # out of batches: start a fresh pass
            loader = DataLoader(dataset, shuffle=True, batch_size=batch_size, drop_last=True)
            loader = iter(loader)
            yield next(loader)


def train(args, model, optimizer):
    batches = iter(sample_data(make_dataset(), args.batch))
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        x, y = next(batches)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            print(f"step {step}: loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train(args, model, optimizer)
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
