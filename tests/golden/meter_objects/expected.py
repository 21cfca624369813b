import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


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


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(8, 4)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, 3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train_loss, train_acc = train_epoch(model, loader, optimizer)
        train_loss.sum = reduce_over_ranks(train_loss.sum)
        train_loss.count = reduce_over_ranks(train_loss.count)
        train_acc.correct = reduce_over_ranks(train_acc.correct)
        train_acc.count = reduce_over_ranks(train_acc.count)
        if RANK == 0:
            print("epoch {}: train loss {}, train acc {}".format(epoch, train_loss, train_acc))
            print(f"epoch {epoch}: average {train_loss.average:.5f} over {train_loss.count} samples")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
