# Windows line endings throughout.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            opt.step()
        print("epoch", epoch)  # one line per epoch


if __name__ == "__main__":
    main()
