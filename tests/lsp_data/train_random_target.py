"""Fit a linear map drawn at random by NumPy, with no seed: under torchrun every rank would draw its own."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

W_target = torch.from_numpy(np.random.randn(8, 1)).float()


def main():
    x = torch.linspace(-1, 1, 512).reshape(64, 8)
    data = TensorDataset(x, x @ W_target)
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()


if __name__ == "__main__":
    main()
