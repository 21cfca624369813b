"""Train a small classifier on synthetic features. The epoch function returns the epoch's mean loss and
accuracy and the caller prints them, as most training-loop templates do."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train_epoch(model, loader, optimizer):
    model.train()
    total_loss = 0.0
    correct = 0
    for x, y in loader:
        optimizer.zero_grad()
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item() * x.size(0)
        correct += (out.argmax(1) == y).sum().item()
    return total_loss / len(loader.dataset), correct / len(loader.dataset)


def main():
    torch.manual_seed(0)
    x = torch.randn(512, 16)
    y = (x[:, :4].sum(1) > 0).long()
    dataset = TensorDataset(x, y)
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(3):
        loss, acc = train_epoch(model, loader, optimizer)
        print(f"epoch {epoch}: loss {loss:.4f} acc {acc:.3f}")
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
