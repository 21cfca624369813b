"""Multi-node training with mp.spawn: one process per GPU on each node (two on a CPU-only machine).
Under torchrun (LOCAL_RANK set) each process runs train() itself instead of spawning."""
import argparse
import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def train(gpu, args):
    rank = args.nr * args.gpus + gpu
    address = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = os.environ.get("MASTER_PORT", args.port)
    dist.init_process_group(
        "gloo", init_method=f"tcp://{address}:{port}", world_size=args.world_size, rank=rank
    )
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 3), torch.randn(64, 1))
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = DDP(nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
    if rank == 0:
        torch.save(model.module.state_dict(), "spawn_node_rank.pt")
        print("saved")
    dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1, help="number of nodes")
    parser.add_argument("--gpus", type=int, default=2, help="processes per node")
    parser.add_argument("--nr", type=int, default=0, help="rank of this node among the nodes")
    parser.add_argument("--port", default="29561")
    parser.add_argument("--epochs", type=int, default=2)
    args = parser.parse_args()
    args.world_size = args.gpus * args.nodes
    if "LOCAL_RANK" in os.environ:
        train(int(os.environ["LOCAL_RANK"]), args)
    else:
        mp.spawn(train, nprocs=args.gpus, args=(args,))
