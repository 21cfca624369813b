"""Loaders built by a helper that returns them as a pair, unpacked under other names."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_loaders(batch_size, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(120, 6, generator=gen)
    y = x @ torch.linspace(-1, 1, 6).unsqueeze(1)
    train_loader = DataLoader(
        TensorDataset(x[:96], y[:96]),
        batch_size=batch_size,
        shuffle=True,
    )
    val_loader = DataLoader(TensorDataset(x[96:], y[96:]), batch_size=batch_size)
    return train_loader, val_loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_dl, val_dl = build_loaders(batch_size=12)
    model = nn.Linear(6, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        model.train()
        for xb, yb in train_dl:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb).item() for xb, yb in val_dl) / len(val_dl)
        print(f"epoch {epoch}: val {val:.4f}")


if __name__ == "__main__":
    main()
