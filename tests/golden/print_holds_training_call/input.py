"""Train a linear regressor on synthetic data; the epoch's loss is printed straight from the call
that trains the epoch, as quick experiment scripts often do."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run_epoch(model, loader, opt):
    model.train()
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item() * x.size(0)
    return total / len(loader.dataset)


def main():
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
    loader = DataLoader(ds, batch_size=16, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        print(f"epoch {epoch}: loss {run_epoch(model, loader, opt):.4f}")
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
