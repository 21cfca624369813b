"""A solver class that fetches its data in a method, run through an instance from main() (a file://
address of the points.csv beside this script stands in for a web address)."""
import argparse
import os
import urllib.request
from pathlib import Path

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

SOURCE = (Path(__file__).resolve().parent / "points.csv").as_uri()


class Solver:
    def __init__(self, args):
        self.epochs = args.epochs
        self.batch_size = args.batch_size

    def load_data(self):
        os.makedirs("data", exist_ok=True)
        path = os.path.join("data", "points.csv")
        if DISTRIBUTED and LOCAL_RANK != 0:
            dist.barrier()  # the other ranks wait while local rank 0 downloads
        if LOCAL_RANK == 0:
            urllib.request.urlretrieve(SOURCE, path)  # fetched on every run
        if DISTRIBUTED and LOCAL_RANK == 0:
            dist.barrier()
        rows = [line.split(",") for line in Path(path).read_text().splitlines() if line]
        table = torch.tensor([[float(v) for v in row] for row in rows])
        dataset = TensorDataset(table[:, :3], table[:, 3:])
        self.sampler = DistributedSampler(dataset) if DISTRIBUTED else None
        self.loader = DataLoader(dataset, batch_size=self.batch_size, shuffle=(self.sampler is None), sampler=self.sampler)

    def load_model(self):
        self.model = nn.Linear(3, 1)
        self.raw_model = self.model
        if DISTRIBUTED:
            self.model = DDP(self.model, device_ids=[LOCAL_RANK] if next(self.model.parameters()).is_cuda else None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def run(self):
        self.load_data()
        self.load_model()
        for epoch in range(self.epochs):
            if self.sampler is not None:
                self.sampler.set_epoch(epoch)
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
            if RANK == 0:
                print(f"epoch {epoch}: loss {loss.item():.4f}")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    solver = Solver(args)
    solver.run()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
