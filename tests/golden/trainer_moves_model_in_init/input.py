"""Fits a small classifier with the Trainer of trainer.py, which picks the device and moves the model there."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer


class Net(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.num_classes = num_classes
        self.body = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
        self.head = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    torch.manual_seed(0)
    x = torch.randn(96, 8)
    y = (x.sum(dim=1) > 0).long()
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model = Net(2)
    trainer = Trainer(model, loader, lr=0.05, ckpt="net.pt")
    trainer.fit(epochs=3)


if __name__ == "__main__":
    main()
