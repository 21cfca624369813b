"""Single-process training with checkpoint helpers: a save that keeps a copy of the best one, an
atomic save through a temporary file, and the best weights read back for a last evaluation."""
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def save_checkpoint(state, is_best, filename="helpers_last.pt"):
    torch.save(state, filename)
    if is_best:
        shutil.copyfile(filename, "helpers_best.pt")


def save_atomically(state, path):
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


@torch.no_grad()
def evaluate(model, x, y):
    return nn.functional.mse_loss(model(x), y).item()


def main():
    torch.manual_seed(0)
    x = torch.randn(80, 3)
    y = x.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    best = float("inf")
    for epoch in range(3):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        val = evaluate(model, x[64:], y[64:])
        is_best = val < best
        best = min(val, best)
        save_checkpoint({"model": model.state_dict(), "epoch": epoch}, is_best)
        save_atomically(optimizer.state_dict(), "helpers_optim.pt")
    state = torch.load("helpers_best.pt")
    model.load_state_dict(state["model"])
    val = evaluate(model, x[64:], y[64:])
    print(f"best epoch {state['epoch']}: val {val:.4f}")


if __name__ == "__main__":
    main()
