"""Calls written one argument per line, with comments: inserted keywords follow their layout."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(48, 4), torch.randn(48, 1))
    train_loader = DataLoader(
        train_set,
        batch_size=8,
        shuffle=True,  # a new order every epoch
    )
    model = nn.Linear(4, 1)
    torch.save(model.state_dict(), "init.pt")
    model.load_state_dict(
        torch.load(
            "init.pt",
            weights_only=True  # tensors only
        )
    )
    optimizer = torch.optim.SGD(model.parameters(),
                                lr=0.05)
    for epoch in range(2):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        print(f"epoch {epoch} done")


if __name__ == "__main__":
    main()
