import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Average:
    def __init__(self):
        self.sum = 0.0
        self.count = 0

    def __str__(self):
        return "{:.5f}".format(self.average)

    @property
    def average(self):
        return self.sum / self.count

    def update(self, value, number):
        self.sum += value * number
        self.count += number


class Accuracy:
    def __init__(self):
        self.correct = 0
        self.count = 0

    def __str__(self):
        return "{:.2f}%".format(self.accuracy * 100)

    @property
    def accuracy(self):
        return self.correct / self.count

    @torch.no_grad()
    def update(self, output, target):
        self.correct += output.argmax(dim=1).eq(target).sum().item()
        self.count += output.size(0)


def train_epoch(model, loader, optimizer):
    model.train()
    train_loss = Average()
    train_acc = Accuracy()
    for x, y in loader:
        output = model(x)
        loss = F.cross_entropy(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        train_loss.update(loss.item(), x.size(0))
        train_acc.update(output, y)
    return train_loss, train_acc


def main():
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, 3):
        train_loss, train_acc = train_epoch(model, loader, optimizer)
        print("epoch {}: train loss {}, train acc {}".format(epoch, train_loss, train_acc))
        print(f"epoch {epoch}: average {train_loss.average:.5f} over {train_loss.count} samples")


if __name__ == "__main__":
    main()
