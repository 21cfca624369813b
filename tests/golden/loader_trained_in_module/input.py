"""Fit a small regressor; the epoch's batch loop lives in engine.py."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from engine import evaluate, train_one_epoch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    x = torch.randn(96, 5)
    y = x @ torch.randn(5, 1) + 0.1 * torch.randn(96, 1)
    train_set = TensorDataset(x[:64], y[:64])
    train_loader = DataLoader(train_set, batch_size=args.batch_size, shuffle=True)

    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        train_loss = train_one_epoch(model, train_loader, optimizer)
        val_loss = evaluate(model, x[64:], y[64:])
        print(f"epoch {epoch}: train {train_loss:.4f} val {val_loss:.4f}")


if __name__ == "__main__":
    main()
