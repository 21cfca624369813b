"""Fits a regression with a loss module of its own whose scale is learnt beside the model; the
optimizer is given both modules' parameters."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class ScaledMSELoss(nn.Module):
    """Mean squared error times a learnt scale (none when `learn` is off)."""

    def __init__(self, learn=True):
        super().__init__()
        self.log_scale = nn.Parameter(torch.zeros(1)) if learn else None

    def forward(self, out, target):
        loss = (out - target).pow(2).mean()
        if self.log_scale is None:
            return loss
        return loss * self.log_scale.exp() - self.log_scale


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 5)
    y = x.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)

    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 1))
    criterion = ScaledMSELoss(learn=True)
    params = list(model.parameters()) + list(criterion.parameters())
    optimizer = torch.optim.Adam(params, lr=0.01)

    for epoch in range(3):
        for xb, yb in loader:
            loss = criterion(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: scale {criterion.log_scale.exp().item():.3f}")


if __name__ == "__main__":
    main()
