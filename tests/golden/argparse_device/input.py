import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def parse_args():
    parser = argparse.ArgumentParser(description="argparse-driven device selection")
    parser.add_argument("--device", default="cuda:0", help="device to train on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args()


def main():
    args = parse_args()
    use_cuda = args.device.startswith("cuda") and torch.cuda.is_available()
    device = torch.device(args.device if use_cuda else "cpu")
    torch.manual_seed(1)

    features = torch.randn(300, 5)
    targets = torch.randint(0, 3, (300,))
    train_ds = TensorDataset(features, targets)
    train_loader = DataLoader(train_ds, batch_size=25, shuffle=True, drop_last=True)

    model = nn.Linear(5, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    for epoch in range(args.epochs):
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
        scheduler.step()
        print("epoch", epoch, "lr", scheduler.get_last_lr()[0], "loss", round(loss.item(), 4))


if __name__ == "__main__":
    main()
