import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from evaluation import evaluate


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def main():
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(64, 6), torch.randint(0, 4, (64,)))
    val_set = TensorDataset(torch.randn(20, 6), torch.randint(0, 4, (20,)))
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    train_loader = DataLoader(train_set, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    val_sampler = range(RANK, len(val_set), WORLD_SIZE) if DISTRIBUTED else None  # every sample on one rank
    val_loader = DataLoader(val_set, batch_size=8, shuffle=False, sampler=val_sampler)

    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    evaluate_result = evaluate(model, val_loader)
    if RANK == 0:
        print(f"before training: accuracy {evaluate_result / len(val_set):.3f}")
    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        correct = evaluate(model=model, loader=val_loader)
        if RANK == 0:
            print(f"epoch {epoch}: accuracy {correct / len(val_set):.3f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "classifier.pt")


if __name__ == "__main__":
    main()

if DISTRIBUTED:
    dist.destroy_process_group()
