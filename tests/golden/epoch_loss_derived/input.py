"""Train a small classifier on synthetic features and report each epoch's loss and accuracy, as the
usual fine-tuning tutorial does: running sums over the epoch, divided by the dataset's size."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def make_data(n, generator):
    x = torch.randn(n, 16, generator=generator)
    y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


def train_one_epoch(model, loader, criterion, optimizer):
    model.train()
    running_loss = 0.0
    running_corrects = 0
    for inputs, labels in loader:
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        # statistics
        running_loss += loss.item() * inputs.size(0)
        running_corrects += (outputs.argmax(1) == labels).sum().item()

    epoch_loss = running_loss / len(loader.dataset)
    epoch_acc = running_corrects / len(loader.dataset)
    print(f"train loss: {epoch_loss:.4f} acc: {epoch_acc:.4f}")
    return epoch_loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train_set = make_data(512, g)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    for epoch in range(args.epochs):
        print(f"Epoch {epoch + 1}/{args.epochs}")
        train_one_epoch(model, train_loader, criterion, optimizer)
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
