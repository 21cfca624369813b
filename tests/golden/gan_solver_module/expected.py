"""Trains the GAN of solver.py on synthetic 6x6 images: a bright bar on a dark background."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from solver import Solver


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def make_images(n, size, seed=0):
    g = torch.Generator().manual_seed(seed)
    images = torch.full((n, size, size), -1.0)
    rows = torch.randint(0, size, (n,), generator=g)
    images[torch.arange(n), rows] = 1.0
    return images + 0.05 * torch.randn(n, size, size, generator=g)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--image_size", type=int, default=6)
    parser.add_argument("--z_dim", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--num_iters", type=int, default=20)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--log_step", type=int, default=5)
    parser.add_argument("--sample_step", type=int, default=10)
    parser.add_argument("--sample_dir", default="samples")
    parser.add_argument("--model_save_dir", default="models")
    config = parser.parse_args()

    torch.manual_seed(0)
    dataset = TensorDataset(make_images(96, config.image_size))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    data_loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=(sampler is None), drop_last=True, sampler=sampler)
    solver = Solver(data_loader, config)
    solver.train()


if __name__ == "__main__":
    main()

if DISTRIBUTED:
    dist.destroy_process_group()
