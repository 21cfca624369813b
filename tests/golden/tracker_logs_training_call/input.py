"""Training that logs each epoch to an experiment tracker straight from the call that trains the epoch."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import wandb


def train_epoch(model, loader, optimizer):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    return total / len(loader.dataset)


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    dataset = TensorDataset(x, x.sum(dim=1, keepdim=True))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    wandb.init(project="epochs")
    for epoch in range(2):
        wandb.log({"epoch": epoch, "loss": round(train_epoch(model, loader, optimizer), 4)})
    wandb.finish()


if __name__ == "__main__":
    main()
