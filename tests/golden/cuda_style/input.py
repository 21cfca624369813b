"""Old-style script: .cuda() calls, guarded so it also runs on a CPU-only machine."""
import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

use_cuda = torch.cuda.is_available()


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.fc1 = nn.Linear(12, 24)
        self.fc2 = nn.Linear(24, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def train(model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        if use_cuda:
            data, target = data.cuda(0), target.cuda(0)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
            print('Train Epoch: {} [{}]\tLoss: {:.6f}'.format(epoch, batch_idx, loss.item()))


def main():
    torch.manual_seed(3)
    dataset = TensorDataset(torch.randn(160, 12), torch.randint(0, 2, (160,)))
    loader = DataLoader(dataset, batch_size=16, shuffle=False)
    model = Net()
    if use_cuda:
        model.cuda(0)
    optimizer = optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(1, 3):
        train(model, loader, optimizer, epoch)


if __name__ == '__main__':
    main()
