"""The model pickled whole through methods that return it (`model.cpu()`), and its weights through
`model.float().state_dict()`."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer):
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        train(model, loader, optimizer)
        torch.save(model.float().state_dict(), "weights.pt")
    torch.save(model.cpu().eval(), "model.pt")  # the whole module, for inference elsewhere


if __name__ == "__main__":
    main()
