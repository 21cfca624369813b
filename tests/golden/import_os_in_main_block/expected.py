"""The script imports os and argparse only inside its __main__ block; main() trains and saves under
the folder --out names."""
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


def main(args):
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=4, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    if RANK == 0:
        torch.save(raw_model.state_dict(), os.path.join(args.out, "model.pt"))

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    import argparse
    import os

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default=".")
    main(parser.parse_args())
