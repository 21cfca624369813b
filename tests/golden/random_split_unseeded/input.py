"""Fit a line on a fixed dataset, split into training and validation at random (the split is not seeded)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, random_split


def main():
    x = torch.linspace(-1, 1, 256).unsqueeze(1)
    dataset = TensorDataset(x, 3 * x + 1)
    train_set, val_set = random_split(dataset, [192, 64])  # a new split every run
    train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=64)
    model = nn.Linear(1, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(5):
        model.train()
        for xb, yb in train_loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val = sum(nn.functional.mse_loss(model(xb), yb, reduction="sum") for xb, yb in val_loader)
        print(f"epoch {epoch}: validation loss {val.item() / len(val_set):.4f}")
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
