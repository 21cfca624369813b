"""A Trainer class that owns the model, the optimizer and the loader."""
import os

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


class Trainer:
    def __init__(self, epochs: int = 2):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(200, 10), torch.randn(200, 1))
        self.train_sampler = DistributedSampler(data) if DISTRIBUTED else None
        self.train_loader = DataLoader(data, batch_size=20, shuffle=(self.train_sampler is None), sampler=self.train_sampler)
        self.model = nn.Linear(10, 1).to(self.device)
        self.raw_model = self.model
        if DISTRIBUTED:
            self.model = DDP(self.model, device_ids=[LOCAL_RANK] if self.device.type == "cuda" else None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.epochs = epochs

    def train_epoch(self, epoch: int) -> float:
        self.model.train()
        last = 0.0
        for xb, yb in self.train_loader:
            xb, yb = xb.to(self.device), yb.to(self.device)
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.model(xb), yb)
            loss.backward()
            self.optimizer.step()
            last = loss.item()
        return last

    def fit(self):
        for epoch in range(self.epochs):
            if self.train_sampler is not None:
                self.train_sampler.set_epoch(epoch)
            loss = self.train_epoch(epoch)
            if RANK == 0:
                print(f"[epoch {epoch}] loss={loss:.4f}")
                # keep the latest weights
                torch.save(self.raw_model.state_dict(), "trainer_ckpt.pt")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    Trainer().fit()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
