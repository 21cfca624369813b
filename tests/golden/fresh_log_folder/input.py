"""A log folder made fresh for each run: removed when it is there, then made again."""
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main(log_dir="runs/latest"):
    torch.manual_seed(0)
    if os.path.isdir(log_dir):
        shutil.rmtree(log_dir)
    os.makedirs(log_dir)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with open(os.path.join(log_dir, "loss.txt"), "a") as f:
            f.write(f"{epoch} {loss.item():.4f}\n")


if __name__ == "__main__":
    main()
