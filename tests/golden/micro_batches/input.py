"""Gradient accumulation: each loaded batch is split into micro-batches, one backward each."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

ACCUM_STEPS = 4


def main():
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(128, 6), torch.randn(128, 1))
    loader = DataLoader(dataset, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            for micro in range(ACCUM_STEPS):
                x, y = xb[micro::ACCUM_STEPS], yb[micro::ACCUM_STEPS]
                loss = F.mse_loss(model(x), y) / ACCUM_STEPS
                loss.backward()
            optimizer.step()
        print(f"epoch {epoch} last micro-batch loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
