"""Single-process training that decides on its own when to stop: a step skipped when the loss is
not finite, early stopping on the validation loss, and a target for the training loss."""
import math

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(128, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]]) + 0.1 * torch.randn(128, 1)
    train_loader = DataLoader(TensorDataset(x[:96], y[:96]), batch_size=8, shuffle=True)
    val_x, val_y = x[96:].to(device), y[96:].to(device)
    model = nn.Linear(4, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    best, bad_epochs, patience = math.inf, 0, 3
    for epoch in range(100):
        for xb, yb in train_loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            if not torch.isfinite(loss):
                continue  # a diverged step is skipped, not applied
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            val_loss = nn.functional.mse_loss(model(val_x), val_y).item()
        if val_loss < best - 1e-4:
            best, bad_epochs = val_loss, 0
        else:
            bad_epochs += 1
        if bad_epochs >= patience:
            print(f"no improvement for {patience} epochs")
            break
        if loss.item() < 0.02:
            print("loss target reached")
            break
    print(f"stopped at epoch {epoch}, best val {best:.4f}")


if __name__ == "__main__":
    main()
