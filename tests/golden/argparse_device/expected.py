import argparse
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


def parse_args():
    parser = argparse.ArgumentParser(description="argparse-driven device selection")
    parser.add_argument("--device", default=f"cuda:{LOCAL_RANK}", help="device to train on")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    return parser.parse_args()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    args = parse_args()
    use_cuda = args.device.startswith("cuda") and torch.cuda.is_available()
    device = torch.device(args.device if use_cuda else "cpu")
    torch.manual_seed(1)

    features = torch.randn(300, 5)
    targets = torch.randint(0, 3, (300,))
    train_ds = TensorDataset(features, targets)
    train_sampler = DistributedSampler(train_ds) if DISTRIBUTED else None
    train_loader = DataLoader(train_ds, batch_size=25, shuffle=(train_sampler is None), drop_last=True, sampler=train_sampler)

    model = nn.Linear(5, 3).to(device)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for inputs, labels in train_loader:
            inputs, labels = inputs.to(device), labels.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), labels)
            loss.backward()
            optimizer.step()
        scheduler.step()
        if RANK == 0:
            print("epoch", epoch, "lr", scheduler.get_last_lr()[0], "loss", round(loss.item(), 4))

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
