"""Trains one of the architectures of the models package, chosen on the command line."""
import argparse

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from models import build_model


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="resnet")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    images = torch.randn(160, 3, 8, 8)
    labels = (images[:, 0].mean((1, 2)) > 0).long() + 2 * (images[:, 1].mean((1, 2)) > 0).long()
    loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True)
    model = build_model(args.arch)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    for epoch in range(args.epochs):
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
        print(f"epoch {epoch}: last batch loss {loss.item():.4f}, lr {scheduler.get_last_lr()[0]:.4f}")
    torch.save({"arch": args.arch, "state_dict": model.state_dict()}, f"{args.arch}.pt")


if __name__ == "__main__":
    main()
