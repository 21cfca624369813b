"""Loaders built by a helper that returns them in a dict, read back by key."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def get_dataloaders(cfg):
    x = torch.randn(100, 5)
    y = (x.sum(1) > 0).long()
    datasets = {"train": TensorDataset(x[:80], y[:80]), "val": TensorDataset(x[80:], y[80:])}
    return {
        "train": DataLoader(datasets["train"], batch_size=cfg["batch_size"], shuffle=True),
        "val": DataLoader(datasets["val"], batch_size=cfg["batch_size"]),
    }


def main():
    cfg = {"batch_size": 10, "epochs": 2, "lr": 0.1}
    torch.manual_seed(0)
    loaders = get_dataloaders(cfg)
    model = nn.Linear(5, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    for epoch in range(cfg["epochs"]):
        for xb, yb in loaders["train"]:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        with torch.no_grad():
            hits = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in loaders["val"])
        print(f"epoch {epoch}: val hits {hits}")


if __name__ == "__main__":
    main()
