"""The script already uses the names ddpfix would introduce, for other things."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

RANK = "top-k"  # a ranking metric, not a process rank
dist = torch.distributions.Normal(0.0, 1.0)


def main():
    torch.manual_seed(0)
    sampler = "uniform"
    raw_model = None
    noise = dist.sample((64, 3))
    loader = DataLoader(TensorDataset(noise, torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        print(RANK, sampler, raw_model, epoch)


if __name__ == "__main__":
    main()
