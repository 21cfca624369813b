import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

PRINT_FREQ = 2


class AverageMeter(object):
    """Keeps the last value and a running average."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


def train(loader, model, criterion, optimizer, epoch):
    batch_time = AverageMeter()
    losses = AverageMeter()
    model.train()
    end = time.time()
    for i, (inputs, target) in enumerate(loader):
        loss = criterion(model(inputs), target)
        losses.update(loss.item(), inputs.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        batch_time.update(time.time() - end)
        end = time.time()
        # running averages so far in this epoch
        if i % PRINT_FREQ == 0:
            print(
                "Epoch: [{0}][{1}/{2}]\t"
                "Loss {loss.val:.4f} ({loss.avg:.4f})".format(epoch, i, len(loader), loss=losses)
            )
    print("epoch {} done: loss {:.5f} over {} samples".format(epoch, losses.avg, losses.count))


def main():
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    loader = DataLoader(dataset, batch_size=4, shuffle=True)
    model = nn.Linear(8, 4)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        train(loader, model, criterion, optimizer, epoch)


if __name__ == "__main__":
    main()
