"""Batches cut from in-memory tensors by hand, through a permutation drawn each epoch."""
import argparse

import torch
import torch.nn as nn


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(100, 3)
    y = x @ torch.tensor([[0.5], [-1.0], [2.0]])
    n = len(x)

    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        perm = torch.randperm(n)
        total = 0.0
        for i in range(0, n, args.batch_size):
            idx = perm[i : i + args.batch_size]
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch}: summed loss {total:.4f}")


if __name__ == "__main__":
    main()
