"""Loader arguments collected in dicts; shuffle is only in them on some paths (CUDA, --shuffle)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def train(model, device, loader, optimizer, epoch):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: last loss {loss.item():.4f}")


@torch.no_grad()
def test(model, device, loader):
    model.eval()
    correct = 0
    for data, target in loader:
        correct += (model(data.to(device)).argmax(1) == target.to(device)).sum().item()
    print(f"test accuracy {correct / len(loader.dataset):.3f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--test-batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--shuffle", action="store_true")
    args = parser.parse_args()
    use_cuda = torch.cuda.is_available()
    torch.manual_seed(1)
    device = torch.device("cuda" if use_cuda else "cpu")

    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = dict(batch_size=args.test_batch_size)
    if use_cuda:
        cuda_kwargs = {"num_workers": 1, "pin_memory": True, "shuffle": True}
        train_kwargs.update(cuda_kwargs)
        test_kwargs = {**test_kwargs, **cuda_kwargs}
    if args.shuffle:
        train_kwargs["shuffle"] = True

    x = torch.randn(160, 8)
    y = (x[:, 0] > 0).long()
    train_set = TensorDataset(x[:120], y[:120])
    test_set = TensorDataset(x[120:], y[120:])
    train_loader = DataLoader(train_set, **train_kwargs)
    test_loader = DataLoader(test_set, **test_kwargs)

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(1, args.epochs + 1):
        train(model, device, train_loader, optimizer, epoch)
        test(model, device, test_loader)


if __name__ == "__main__":
    main()
