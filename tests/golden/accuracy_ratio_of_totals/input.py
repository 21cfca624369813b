"""Train a small classifier and report the running accuracy as `correct / total`, both counted over the
epoch, the way the popular CIFAR-10 training scripts print their progress."""

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset


def train(epoch, net, trainloader, optimizer, criterion):
    net.train()
    train_loss = 0
    correct = 0
    total = 0
    for batch_idx, (inputs, targets) in enumerate(trainloader):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()

        train_loss += loss.item()
        _, predicted = outputs.max(1)
        total += targets.size(0)
        correct += predicted.eq(targets).sum().item()
    print('Epoch %d | Loss: %.3f | Acc: %.3f%% (%d/%d)'
          % (epoch, train_loss / (batch_idx + 1), 100. * correct / total, correct, total))


def test(net, testloader):
    net.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            _, predicted = net(inputs).max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    print('Test Acc: %.3f%%' % (100. * correct / total))


def main():
    torch.manual_seed(0)
    x = torch.randn(600, 20)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    trainset = TensorDataset(x[:500], y[:500])
    trainloader = DataLoader(trainset, batch_size=50, shuffle=True)
    testloader = DataLoader(TensorDataset(x[500:], y[500:]), batch_size=50, shuffle=False)
    net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for epoch in range(3):
        train(epoch, net, trainloader, optimizer, criterion)
        test(net, testloader)


if __name__ == '__main__':
    main()
