"""Training and evaluation in helper functions; the validation loader must stay unsharded."""
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


def build_model(hidden):
    return nn.Sequential(nn.Linear(6, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for xb, yb in loader:
        pred = model(xb.to(device)).argmax(dim=1)
        correct += (pred == yb.to(device)).sum().item()
        total += yb.numel()
    return correct / total


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x, y = torch.randn(240, 6), torch.randint(0, 2, (240,))
    train_dataset = TensorDataset(x[:200], y[:200])
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=20, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(TensorDataset(x[200:], y[200:]), batch_size=20)

    model = build_model(hidden=12).to(device)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    best = 0.0
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        loss = train_one_epoch(model, train_loader, optimizer, device)
        acc = evaluate(model, val_loader, device)
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss:.4f} val_acc {acc:.3f}")
        if acc >= best:
            best = acc
            if RANK == 0:
                torch.save(raw_model.state_dict(), "best.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
