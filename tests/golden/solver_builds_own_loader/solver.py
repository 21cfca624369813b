"""The Solver owns everything: the network, its optimizer, the data and the loops over it."""

import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def synthetic(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 12, generator=g)
    y = (x[:, :3].sum(dim=1) > 0).long()
    return TensorDataset(x, y)


class Solver:
    def __init__(self, config):
        self.epochs = config.epochs
        self.ckpt_dir = config.ckpt_dir
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        self.net = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 2)).to(self.device)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=config.lr, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()

        # the data: a shuffled training loader and a fixed validation one
        self.train_loader = DataLoader(synthetic(128, 0), batch_size=config.batch_size, shuffle=True)
        self.val_loader = DataLoader(synthetic(32, 1), batch_size=16)

    def train(self):
        os.makedirs(self.ckpt_dir, exist_ok=True)
        for epoch in range(self.epochs):
            self.net.train()
            for i, (x, y) in enumerate(self.train_loader):
                x, y = x.to(self.device), y.to(self.device)
                loss = self.criterion(self.net(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                if i % 4 == 0:
                    print(f"epoch {epoch} step {i} loss {loss.item():.4f}")
            accuracy = self.evaluate()
            print(f"epoch {epoch} val accuracy {accuracy:.3f}")
            torch.save(self.net.state_dict(), os.path.join(self.ckpt_dir, f"epoch{epoch}.pt"))

    @torch.no_grad()
    def evaluate(self):
        self.net.eval()
        correct = total = 0
        for x, y in self.val_loader:
            x, y = x.to(self.device), y.to(self.device)
            correct += (self.net(x).argmax(dim=1) == y).sum().item()
            total += y.numel()
        return correct / total
