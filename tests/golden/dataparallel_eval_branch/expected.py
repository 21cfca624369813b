"""A test-only branch that wraps a loaded model in DataParallel, evaluates and exits, before a training
path that wraps its own model in DataParallel when CUDA is there; the checkpoint pickles the plain
module through `net.module if use_cuda else net`."""
import argparse
import contextlib
import os
import sys

import torch
import torch.backends.cudnn as cudnn
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

parser = argparse.ArgumentParser()
parser.add_argument("--test-only", action="store_true", help="evaluate the saved model and exit")
args = parser.parse_args()

use_cuda = torch.cuda.is_available()
best_acc = 0
torch.manual_seed(0)
trainset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
testset = TensorDataset(torch.randn(32, 8), torch.arange(32) % 4)
train_sampler = DistributedSampler(trainset) if DISTRIBUTED else None
trainloader = DataLoader(trainset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
testloader = DataLoader(testset, batch_size=16, shuffle=False)


def get_network():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


if args.test_only:
    if RANK == 0:
        print("| Test only")
    checkpoint = torch.load("checkpoint/net.t7", weights_only=False, map_location="cpu")
    net = checkpoint["net"]
    if use_cuda:
        net.cuda()
        if not DISTRIBUTED:
            net = torch.nn.DataParallel(net, device_ids=range(torch.cuda.device_count()))
        cudnn.benchmark = True
    net.eval()
    correct = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            if use_cuda:
                inputs, targets = inputs.cuda(), targets.cuda()
            correct += (net(inputs).argmax(1) == targets).sum().item()
    if RANK == 0:
        print(f"| Test accuracy {100.0 * correct / len(testset):.2f}%")
    sys.exit(0)

net = get_network()
raw_net = net
if use_cuda:
    net.cuda()
    if not DISTRIBUTED:
        net = torch.nn.DataParallel(net, device_ids=range(torch.cuda.device_count()))
    cudnn.benchmark = True
if DISTRIBUTED:
    net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
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
    if RANK == 0:
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
    if RANK == 0:
        print(f"| Validation epoch {epoch} acc {acc:.2f}%")
    if acc >= best_acc:
        state = {"net": raw_net, "acc": acc, "epoch": epoch}
        if not os.path.isdir("checkpoint"):
            with contextlib.suppress(FileExistsError):
                os.mkdir("checkpoint")
        if RANK == 0:
            torch.save(state, "checkpoint/net.t7")
        best_acc = acc


for epoch in range(2):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    train(epoch)
    test(epoch)
if RANK == 0:
    print(f"* Best accuracy {best_acc:.2f}%")

if DISTRIBUTED:
    dist.destroy_process_group()
