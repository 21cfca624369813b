"""A test-only branch that wraps a loaded model in DataParallel, evaluates and exits, before a training
path that wraps its own model in DataParallel when CUDA is there; the checkpoint pickles the plain
module through `net.module if use_cuda else net`."""
import argparse
import os
import sys

import torch
import torch.backends.cudnn as cudnn
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--test-only", action="store_true", help="evaluate the saved model and exit")
args = parser.parse_args()

use_cuda = torch.cuda.is_available()
best_acc = 0
torch.manual_seed(0)
trainset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
testset = TensorDataset(torch.randn(32, 8), torch.arange(32) % 4)
trainloader = DataLoader(trainset, batch_size=8, shuffle=True)
testloader = DataLoader(testset, batch_size=16, shuffle=False)


def get_network():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


if args.test_only:
    print("| Test only")
    checkpoint = torch.load("checkpoint/net.t7", weights_only=False)
    net = checkpoint["net"]
    if use_cuda:
        net.cuda()
        net = torch.nn.DataParallel(net, device_ids=range(torch.cuda.device_count()))
        cudnn.benchmark = True
    net.eval()
    correct = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            if use_cuda:
                inputs, targets = inputs.cuda(), targets.cuda()
            correct += (net(inputs).argmax(1) == targets).sum().item()
    print(f"| Test accuracy {100.0 * correct / len(testset):.2f}%")
    sys.exit(0)

net = get_network()
if use_cuda:
    net.cuda()
    net = torch.nn.DataParallel(net, device_ids=range(torch.cuda.device_count()))
    cudnn.benchmark = True
criterion = nn.CrossEntropyLoss()


def train(epoch):
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    for inputs, targets in trainloader:
        if use_cuda:
            inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        loss = criterion(net(inputs), targets)
        loss.backward()
        optimizer.step()
    print(f"| Epoch {epoch} loss {loss.item():.4f}")


def test(epoch):
    global best_acc
    net.eval()
    correct = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            if use_cuda:
                inputs, targets = inputs.cuda(), targets.cuda()
            correct += (net(inputs).argmax(1) == targets).sum().item()
    acc = 100.0 * correct / len(testset)
    print(f"| Validation epoch {epoch} acc {acc:.2f}%")
    if acc >= best_acc:
        state = {"net": net.module if use_cuda else net, "acc": acc, "epoch": epoch}
        if not os.path.isdir("checkpoint"):
            os.mkdir("checkpoint")
        torch.save(state, "checkpoint/net.t7")
        best_acc = acc


for epoch in range(2):
    train(epoch)
    test(epoch)
print(f"* Best accuracy {best_acc:.2f}%")
