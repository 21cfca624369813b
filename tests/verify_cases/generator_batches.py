"""Batches from a generator of its own: every rank would train on all of them."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def batches(x, y, size):
    for i in range(0, len(x), size):
        yield x[i : i + size], y[i : i + size]


def main():
    torch.manual_seed(0)
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in batches(x, y, 8):
            optimizer.zero_grad()
            loss = F.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
    print(f"loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
