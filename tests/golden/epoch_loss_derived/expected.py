"""Train a small classifier on synthetic features and report each epoch's loss and accuracy, as the
usual fine-tuning tutorial does: running sums over the epoch, divided by the dataset's size."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def make_data(n, generator):
    x = torch.randn(n, 16, generator=generator)
    y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


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

    global_running_loss = reduce_over_ranks(running_loss)
    epoch_loss = global_running_loss / len(loader.dataset)
    global_running_corrects = reduce_over_ranks(running_corrects)
    epoch_acc = global_running_corrects / len(loader.dataset)
    if RANK == 0:
        print(f"train loss: {epoch_loss:.4f} acc: {epoch_acc:.4f}")
    return epoch_loss


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    train_set = make_data(512, g)
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    train_loader = DataLoader(train_set, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        if RANK == 0:
            print(f"Epoch {epoch + 1}/{args.epochs}")
        train_one_epoch(model, train_loader, criterion, optimizer)
    if RANK == 0:
        torch.save(raw_model.state_dict(), "model.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
