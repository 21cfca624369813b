"""Pre-train a linear layer, then stack a second layer on it and train the stack."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, epochs):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    return model


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Linear(8, 2)
    model = train(model, loader, 1)  # pre-training
    model = nn.Sequential(model, nn.ReLU(), nn.Linear(2, 2))
    model = train(model, loader, 1)
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
