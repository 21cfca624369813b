"""The usual "multi-GPU" script: nn.DataParallel over every visible GPU."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))

    def forward(self, x):
        return self.layers(x)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(128, 8), torch.randint(0, 2, (128,)))
    loader = DataLoader(dataset, batch_size=32, shuffle=True)

    model = MLP().to(device)
    model = nn.DataParallel(model)  # use every GPU
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
    torch.save(model.module.state_dict(), "dp_model.pt")
    print(sorted(torch.load("dp_model.pt")))


if __name__ == "__main__":
    main()
