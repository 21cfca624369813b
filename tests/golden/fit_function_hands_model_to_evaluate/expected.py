"""The script calls fit() of its own module, which builds its model and its loaders, trains, hands the
model to evaluate() of the same module after each epoch (a BatchNorm model; evaluate reads its width)
and saves its weights."""
import argparse
import os

from fitting import fit
import torch
import torch.distributed as dist


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="model.pt")
    args = parser.parse_args()
    fit(args.epochs, args.out)


if __name__ == "__main__":
    main()

if DISTRIBUTED:
    dist.destroy_process_group()
