import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader = DataLoader(TensorDataset(torch.randn(40, 2), torch.randn(40, 1)), batch_size=5, shuffle=True)
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        print("epoch", epoch, "done")
    torch.save(model.state_dict(), "inline.pt")
