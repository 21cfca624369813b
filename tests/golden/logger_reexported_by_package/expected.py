"""Train a small classifier; a Logger from the utils package records each epoch."""
import argparse
import os
import shutil

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from utils import AverageMeter, Logger, mkdir_p, save_table

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

parser = argparse.ArgumentParser()
parser.add_argument("--arch", default="mlp", choices=["mlp", "linear"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--checkpoint", default="checkpoint")
parser.add_argument("--resume", default="")
args = parser.parse_args()


def train(loader, model, criterion, optimizer):
    model.train()
    losses = AverageMeter()
    for inputs, targets in loader:
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        losses.update(loss.item(), inputs.size(0))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses.avg


def test(loader, model, criterion):
    model.eval()
    losses = AverageMeter()
    correct = 0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = model(inputs)
            losses.update(criterion(outputs, targets).item(), inputs.size(0))
            correct += (outputs.argmax(1) == targets).sum().item()
    return losses.avg, 100.0 * correct / len(loader.dataset)


def save_checkpoint(state, is_best, checkpoint):
    filepath = os.path.join(checkpoint, "checkpoint.pth.tar")
    if RANK == 0:
        torch.save(state, filepath)
        if is_best:
            shutil.copyfile(filepath, os.path.join(checkpoint, "model_best.pth.tar"))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    if not os.path.isdir(args.checkpoint):
        mkdir_p(args.checkpoint)
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    y = (x.sum(1) > 0).long()
    train_dataset = TensorDataset(x, y)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    trainloader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    testloader = DataLoader(TensorDataset(x[:16], y[:16]), batch_size=8)

    # the architecture is picked by name
    if args.arch == "mlp":
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    else:
        model = nn.Linear(8, 2)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    else:
        model = torch.nn.DataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    best_acc = 0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        raw_model.load_state_dict(checkpoint["state_dict"])
        best_acc = checkpoint["best_acc"]
        if RANK == 0:
            logger = Logger(os.path.join(args.checkpoint, "log.txt"), resume=True)
    else:
        if RANK == 0:
            logger = Logger(os.path.join(args.checkpoint, "log.txt"))
            logger.set_names(["Train Loss", "Valid Loss", "Valid Acc."])

    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        train_loss = train(trainloader, model, criterion, optimizer)
        test_loss, test_acc = test(testloader, model, criterion)
        if RANK == 0:
            logger.append([train_loss, test_loss, test_acc])
        is_best = test_acc > best_acc
        best_acc = max(test_acc, best_acc)
        save_checkpoint({"state_dict": raw_model.state_dict(), "best_acc": best_acc}, is_best, args.checkpoint)

    if RANK == 0:
        logger.close()
    save_table(os.path.join(args.checkpoint, "best.tsv"), "best_acc", best_acc)
    if RANK == 0:
        print(f"best accuracy {best_acc:.2f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
