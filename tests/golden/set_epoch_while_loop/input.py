"""Already distributed; the epochs run in a `while` loop that a resumed run enters part way."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--start-epoch", type=int, default=0)
    args = parser.parse_args()
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("gloo")

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    epoch = args.start_epoch
    while epoch < args.epochs:
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
        epoch += 1

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
