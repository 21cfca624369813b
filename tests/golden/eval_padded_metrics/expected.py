"""Already DDP: validation sharded with a DistributedSampler, counting padded duplicates; the test set is evaluated whole."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    val_set = TensorDataset(torch.randn(21, 4), torch.randint(0, 2, (21,)))
    test_set = TensorDataset(torch.randn(13, 4), torch.randint(0, 2, (13,)))
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    val_sampler = DistributedSampler(val_set, shuffle=False) if DISTRIBUTED else None
    train_loader = DataLoader(train_set, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler)
    test_loader = DataLoader(test_set, batch_size=8)

    model = nn.Linear(4, 2)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(2):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for xb, yb in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
        correct = total = 0
        with torch.no_grad():
            for xb, yb in val_loader:
                correct += (model(xb).argmax(1) == yb).sum().item()
                total += len(yb)
        if RANK == 0:
            print(f"epoch {epoch} val samples seen by rank 0: {total}")

    test_correct = test_total = 0
    with torch.no_grad():
        for xb, yb in test_loader:
            test_correct += (raw_model(xb).argmax(1) == yb).sum().item()
            test_total += len(yb)
    if RANK == 0:
        print(f"test accuracy {test_correct / test_total:.3f} over {test_total}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
