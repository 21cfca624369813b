"""A script half-way to distributed: it reads its rank and keeps evaluation and saving on rank 0."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from checkpoints import load_checkpoint, save_checkpoint

rank = int(os.environ.get("RANK", 0))


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    loss = F.mse_loss(model(x), y).item()
    model.train()
    return loss


def unwrap(model):
    return model.module if hasattr(model, "module") else model


def weight_norm(model):
    return sum(p.norm().item() for p in unwrap(model).parameters())


def main():
    torch.manual_seed(0)
    x, y = torch.randn(128, 5), torch.randn(128, 1)
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

    model = Regressor()
    start = 0
    if os.path.exists("resume.pt"):
        start = load_checkpoint(model, "resume.pt") + 1
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(start, 3):
        for xb, yb in loader:
            optimizer.zero_grad()
            F.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} val {evaluate(model, x, y):.4f} norm {weight_norm(model):.3f}")
            if epoch == 0:
                save_checkpoint(model, epoch, "first.pt")

    # back to the weights of the first epoch, to compare
    epoch = load_checkpoint(model, "first.pt")
    if rank == 0:
        print(f"epoch {epoch} again: val {evaluate(model, x, y):.4f}")


if __name__ == "__main__":
    main()
