"""A classifier with its own distributed path: spawned workers (--multiprocessing-distributed), or one
process per rank started by hand or by torchrun with --dist-url env://."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description="classifier")
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--world-size", type=int, default=-1, help="number of nodes")
parser.add_argument("--rank", type=int, default=-1, help="node rank")
parser.add_argument("--dist-url", default="tcp://127.0.0.1:23456", help="url to set up the process group")
parser.add_argument("--dist-backend", default="nccl", help="process group backend")
parser.add_argument("--multiprocessing-distributed", action="store_true", help="one process per GPU")
parser.add_argument("--gpu", type=int, default=None, help="GPU to use")


def main():
    args = parser.parse_args()
    if args.dist_url == "env://" and args.world_size == -1:
        args.world_size = int(os.environ.get("WORLD_SIZE", 1))
    args.distributed = args.world_size > 1 or args.multiprocessing_distributed
    procs_per_node = torch.cuda.device_count() if torch.cuda.is_available() else 2
    if args.multiprocessing_distributed:
        args.world_size = procs_per_node * args.world_size
        mp.spawn(main_worker, nprocs=procs_per_node, args=(procs_per_node, args))
    else:
        main_worker(args.gpu, procs_per_node, args)


def main_worker(gpu, procs_per_node, args):
    args.gpu = gpu
    if args.distributed:
        if args.dist_url == "env://" and args.rank == -1:
            args.rank = int(os.environ.get("RANK", 0))
        if args.multiprocessing_distributed:
            args.rank = args.rank * procs_per_node + gpu
        dist.init_process_group(
            backend=args.dist_backend, init_method=args.dist_url, world_size=args.world_size, rank=args.rank
        )
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    if torch.cuda.is_available() and args.gpu is not None:
        torch.cuda.set_device(args.gpu)
        model.cuda(args.gpu)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    dataset = TensorDataset(torch.randn(80, 8), torch.randint(0, 2, (80,)))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    for epoch in range(args.epochs):
        for images, target in loader:
            if args.gpu is not None and torch.cuda.is_available():
                images, target = images.cuda(args.gpu), target.cuda(args.gpu)
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(images), target).backward()
            optimizer.step()
        torch.save({"epoch": epoch, "state_dict": model.state_dict()}, "spawn_workers.pt")


if __name__ == "__main__":
    main()
