"""Trains from scratch; finetune.py beside it builds its loader with the same utils.get_loader."""
import torch
import torch.nn as nn

from utils import get_loader, make_data


def main():
    torch.manual_seed(0)
    train_loader = get_loader(make_data(96, seed=1), batch_size=8)
    val_loader = get_loader(make_data(32, seed=2), batch_size=8, shuffle=False)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb).item() for xb, yb in val_loader)
        print(f"epoch {epoch}: val {val:.4f}")


if __name__ == "__main__":
    main()
