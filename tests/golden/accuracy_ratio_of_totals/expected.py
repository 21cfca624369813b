"""Train a small classifier and report the running accuracy as `correct / total`, both counted over the
epoch, the way the popular CIFAR-10 training scripts print their progress."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def reduce_over_ranks(value, average=False):
    """`value` summed over every rank (averaged with `average=True`); `value` itself in a single process."""
    if not DISTRIBUTED:
        return value
    total = torch.as_tensor(value, dtype=torch.float64).detach().cpu().clone()
    dist.all_reduce(total)
    if average:
        total /= WORLD_SIZE
    if isinstance(value, torch.Tensor):  # the same kind of value back: `.item()` still works on it
        return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
    if type(value).__module__ == "numpy":
        return total.numpy()
    if isinstance(value, int) and not average:  # a count summed stays a whole number
        return int(total.item())
    return total.item() if total.dim() == 0 else total.tolist()


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
    avg_train_loss = reduce_over_ranks(train_loss, average=True)
    global_correct = reduce_over_ranks(correct)
    global_total = reduce_over_ranks(total)
    if RANK == 0:
        print('Epoch %d | Loss: %.3f | Acc: %.3f%% (%d/%d)'
              % (epoch, avg_train_loss / (batch_idx + 1), 100. * global_correct / global_total, global_correct, global_total))


def test(net, testloader):
    net.eval()
    correct = 0
    total = 0
    with torch.no_grad():
        for inputs, targets in testloader:
            _, predicted = net(inputs).max(1)
            total += targets.size(0)
            correct += predicted.eq(targets).sum().item()
    if RANK == 0:
        print('Test Acc: %.3f%%' % (100. * correct / total))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(600, 20)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    trainset = TensorDataset(x[:500], y[:500])
    train_sampler = DistributedSampler(trainset) if DISTRIBUTED else None
    trainloader = DataLoader(trainset, batch_size=50, shuffle=(train_sampler is None), sampler=train_sampler)
    testloader = DataLoader(TensorDataset(x[500:], y[500:]), batch_size=50, shuffle=False)
    net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
    if DISTRIBUTED:
        net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    for epoch in range(3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        train(epoch, net, trainloader, optimizer, criterion)
        test(net, testloader)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == '__main__':
    main()
