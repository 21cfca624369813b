"""Train, then write the weights through an open file and read them back to evaluate."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Linear(8, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    with open("w.pt", "wb") as f:
        torch.save(model.state_dict(), f)
    with open("w.pt", "rb") as f:
        model.load_state_dict(torch.load(f))


if __name__ == "__main__":
    main()
