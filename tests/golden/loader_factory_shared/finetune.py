"""Fine-tunes on other data with the loader factory input.py uses: its fix must leave this one working."""
import torch
import torch.nn as nn

from utils import get_loader, make_data


def main():
    torch.manual_seed(1)
    loader = get_loader(make_data(48, seed=3), batch_size=6)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
    print(f"weight norm {model.weight.norm().item():.4f}")


if __name__ == "__main__":
    main()
