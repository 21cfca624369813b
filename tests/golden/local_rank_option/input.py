"""Written for `python -m torch.distributed.launch`, which passes --local_rank on the command line."""
import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1, help="set by the launcher")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    return parser.parse_args()


def main():
    args = parse_args()
    if args.local_rank != -1:
        dist.init_process_group(backend="nccl", init_method="env://")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: mean loss {total / len(loader):.4f}")
    torch.save(model.state_dict(), "local_rank_option.pt")


if __name__ == "__main__":
    main()
