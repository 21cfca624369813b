import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import utils

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

parser = argparse.ArgumentParser()
parser.add_argument("--save-dir", default=".")
parser.add_argument("--name", default="linear.pt")
args = parser.parse_args()


def train(loader):
    model = nn.Linear(8, 3)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if isinstance(loader.sampler, DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        utils.save_checkpoint(raw_model, epoch, args)
    return raw_model


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    gen = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8, generator=gen), torch.randint(0, 3, (64,), generator=gen))
    sampler = DistributedSampler(ds) if DISTRIBUTED else None
    loader = DataLoader(ds, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = train(loader)
    # back to the weights the helper saved last
    if DISTRIBUTED:
        dist.barrier()
    model, epoch = utils.load_checkpoint(model, args.save_dir, args.name)

    if DISTRIBUTED:
        dist.destroy_process_group()
