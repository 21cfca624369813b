import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Forecaster(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden
        self.body = nn.Sequential(nn.Linear(6, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def train(self):
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(96, 6), torch.randn(96, 1))
        loader = DataLoader(data, batch_size=12, shuffle=True)
        model = Forecaster(hidden=16)
        model = model.to(self.device)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        print(f"training a forecaster with {model.hidden} hidden units")
        for epoch in range(self.args.epochs):
            total = 0.0
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
            print(f"epoch {epoch} mean batch loss {total / len(loader):.4f}")
        torch.save(model.state_dict(), self.args.out)
