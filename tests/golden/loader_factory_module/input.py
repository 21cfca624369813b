"""The loaders come from a helper in data_utils.py: sharding them means editing that file."""
import torch
import torch.nn as nn

from data_utils import build_loaders


def main():
    torch.manual_seed(0)
    train_loader, val_loader = build_loaders(batch_size=9)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb).item() for xb, yb in val_loader)
        print(f"epoch {epoch}: val {val:.4f}")


if __name__ == "__main__":
    main()
