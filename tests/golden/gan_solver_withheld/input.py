"""Trains the GAN of solver.py on synthetic 6x6 images, resuming the generator from a checkpoint when given one."""
import argparse

import torch
from torch.utils.data import DataLoader, TensorDataset

from solver import Solver


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
    parser.add_argument("--resume_G", default=None)
    config = parser.parse_args()

    torch.manual_seed(0)
    dataset = TensorDataset(make_images(96, config.image_size))
    data_loader = DataLoader(dataset, batch_size=config.batch_size, shuffle=True, drop_last=True)
    solver = Solver(data_loader, config)
    solver.train()


if __name__ == "__main__":
    main()
