"""Fit a random linear map until the loss is small: the target is drawn once, with no seed."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

W_target = torch.randn(8, 1)  # the task


def main():
    X = torch.randn(256, 8)
    y = X @ W_target
    loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(50):
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if loss.item() < 1e-4:
            break
    print("done")


if __name__ == "__main__":
    main()
