"""Classifier on a toy set: the model and its loss come from set_model(), the optimizer from a helper
of train_utils.py, and several GPUs share one batch through DataParallel."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from train_utils import save_model, set_optimizer


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def set_loader(batch_size):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 8, generator=g)
    y = (x.sum(dim=1) > 0).long()
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)


def set_model():
    model = Net()
    criterion = nn.CrossEntropyLoss()
    if torch.cuda.is_available():
        if torch.cuda.device_count() > 1:
            model = nn.DataParallel(model)  # one batch split over the GPUs
        model = model.cuda()
        criterion = criterion.cuda()
    return model, criterion


def train(loader, model, criterion, optimizer):
    model.train()
    for x, y in loader:
        if torch.cuda.is_available():
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    torch.manual_seed(0)
    loader = set_loader(args.batch_size)
    model, criterion = set_model()
    optimizer = set_optimizer(model, lr=0.1)
    for epoch in range(args.epochs):
        train(loader, model, criterion, optimizer)
    save_model(model, optimizer, "last.pth")


if __name__ == "__main__":
    main()
