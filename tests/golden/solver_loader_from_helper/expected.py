"""Entry point: parse the options, seed, and let the Solver train."""

import argparse
import os

import torch
import torch.distributed as dist

from solver import Solver


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


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

if DISTRIBUTED:
    dist.destroy_process_group()
