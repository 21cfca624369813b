"""Train a small classifier; a Logger from the utils package records each epoch."""
import argparse
import os
import shutil

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from utils import AverageMeter, Logger, mkdir_p, save_table

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
    torch.save(state, filepath)
    if is_best:
        shutil.copyfile(filepath, os.path.join(checkpoint, "model_best.pth.tar"))


def main():
    if not os.path.isdir(args.checkpoint):
        mkdir_p(args.checkpoint)
    torch.manual_seed(0)
    x = torch.randn(64, 8)
    y = (x.sum(1) > 0).long()
    trainloader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    testloader = DataLoader(TensorDataset(x[:16], y[:16]), batch_size=8)

    # the architecture is picked by name
    if args.arch == "mlp":
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    else:
        model = nn.Linear(8, 2)
    model = torch.nn.DataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    best_acc = 0
    if args.resume:
        checkpoint = torch.load(args.resume)
        model.load_state_dict(checkpoint["state_dict"])
        best_acc = checkpoint["best_acc"]
        logger = Logger(os.path.join(args.checkpoint, "log.txt"), resume=True)
    else:
        logger = Logger(os.path.join(args.checkpoint, "log.txt"))
        logger.set_names(["Train Loss", "Valid Loss", "Valid Acc."])

    for epoch in range(args.epochs):
        train_loss = train(trainloader, model, criterion, optimizer)
        test_loss, test_acc = test(testloader, model, criterion)
        logger.append([train_loss, test_loss, test_acc])
        is_best = test_acc > best_acc
        best_acc = max(test_acc, best_acc)
        save_checkpoint({"state_dict": model.state_dict(), "best_acc": best_acc}, is_best, args.checkpoint)

    logger.close()
    save_table(os.path.join(args.checkpoint, "best.tsv"), "best_acc", best_acc)
    print(f"best accuracy {best_acc:.2f}")


if __name__ == "__main__":
    main()
