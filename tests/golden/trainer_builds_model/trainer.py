"""The trainer of the script beside it: builds its model and optimizer itself, runs the epochs over the
loader it is handed, says when each epoch is done and saves a checkpoint at the end."""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, train_loader, epochs, lr=0.05, hidden=16):
        self.train_loader = train_loader
        self.epochs = epochs
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = Net(hidden)
        self.model.to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.loss_fn = nn.MSELoss()

    def train_epoch(self):
        self.model.train()
        for x, y in self.train_loader:
            x, y = x.to(self.device), y.to(self.device)
            loss = self.loss_fn(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()

    def fit(self, path):
        for epoch in range(self.epochs):
            self.train_epoch()
            print(f"epoch {epoch} done")
        torch.save(self.model.state_dict(), path)
