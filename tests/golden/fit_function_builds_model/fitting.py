import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Regressor(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width
        self.net = nn.Sequential(nn.Linear(5, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


def fit(epochs, out):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(80, 5), torch.randn(80, 1))
    loader = DataLoader(data, batch_size=10, shuffle=True)  # shuffled every epoch
    model = Regressor(width=12).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    print(f"fitting a regressor {model.width} units wide")
    for epoch in range(epochs):
        total = 0.0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} mean batch loss {total / len(loader):.4f}")
    torch.save(model.state_dict(), out)
