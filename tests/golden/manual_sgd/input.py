"""Logistic regression trained with a hand-written SGD update: there is no optimizer object."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def sgd_step(model, lr):
    with torch.no_grad():
        for p in model.parameters():
            p -= lr * p.grad  # sees the averaged gradients once the model is wrapped


def main():
    torch.manual_seed(0)
    x = torch.randn(160, 4)
    y = (x[:, 0] + x[:, 1] > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=20, shuffle=True)
    model = nn.Linear(4, 2)
    for epoch in range(3):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            model.zero_grad()
            loss.backward()
            sgd_step(model, lr=0.5)
        print(f"epoch {epoch} loss {loss.item():.4f}")
    accuracy = (model(x).argmax(1) == y).float().mean().item()
    print(f"train accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
