"""Fit a curve, holding out a fifth of the samples with a split made by hand: shuffle the indices,
cut them, and take a Subset of each part."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Subset, TensorDataset


def main():
    x = torch.linspace(-2, 2, 500).unsqueeze(1)
    dataset = TensorDataset(x, torch.sin(3 * x))
    indices = list(range(len(dataset)))
    split = len(dataset) // 5
    np.random.shuffle(indices)
    train_idx, val_idx = indices[split:], indices[:split]
    train_loader = DataLoader(Subset(dataset, train_idx), batch_size=25, shuffle=True)
    val_loader = DataLoader(Subset(dataset, val_idx), batch_size=100)

    model = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        model.train()
        for xb, yb in train_loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb, reduction="sum").item() for xb, yb in val_loader)
        print(f"epoch {epoch} val mse {val / len(val_idx):.4f}")
    torch.save(model.state_dict(), "curve.pt")


if __name__ == "__main__":
    main()
