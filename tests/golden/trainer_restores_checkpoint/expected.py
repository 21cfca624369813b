"""Trains the sequence classifier of trainer.py on synthetic sequences: the label is the feature whose
values sum highest over the sequence."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from trainer import Trainer


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def make_sequences(n, steps, features, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, steps, features, generator=g)
    y = x.sum(dim=1).argmax(dim=1)
    return TensorDataset(x, y)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=3e-2)
    parser.add_argument("--hidden_size", type=int, default=24)
    parser.add_argument("--ckpt_dir", default="ckpt")
    parser.add_argument("--resume", default=None)
    config = parser.parse_args()

    torch.manual_seed(0)
    train_set = make_sequences(128, 6, 3, seed=1)
    valid_set = make_sequences(48, 6, 3, seed=2)
    train_sampler = DistributedSampler(train_set) if DISTRIBUTED else None
    train_loader = DataLoader(train_set, batch_size=config.batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
    valid_loader = DataLoader(valid_set, batch_size=config.batch_size)
    trainer = Trainer(config, train_loader, valid_loader)
    trainer.train()


if __name__ == "__main__":
    main()

if DISTRIBUTED:
    dist.destroy_process_group()
