"""Entry point: parse the options, seed, and let the Solver train."""

import argparse

import torch

from solver import Solver


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--ckpt-dir", default="checkpoints")
    config = parser.parse_args()

    torch.manual_seed(0)
    solver = Solver(config)
    solver.train()


if __name__ == "__main__":
    main()
