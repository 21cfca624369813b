"""The Solver owns the network, its optimizer and the loops; the data comes from loaders.py."""

import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

from loaders import get_loader, synthetic


class Solver:
    def __init__(self, config):
        self.epochs = config.epochs
        self.ckpt_dir = config.ckpt_dir
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        self.net = nn.Sequential(nn.Linear(12, 24), nn.ReLU(), nn.Linear(24, 2)).to(self.device)
        if dist.is_initialized():
            self.net = DDP(self.net, device_ids=[torch.cuda.current_device()] if self.device.type == "cuda" else None)
        self.optimizer = torch.optim.SGD(self.net.parameters(), lr=config.lr, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()

        self.data_loader = get_loader(config, distributed=dist.is_initialized())
        self.val_loader = DataLoader(synthetic(32, 1), batch_size=16)

    def train(self):
        os.makedirs(self.ckpt_dir, exist_ok=True)
        for epoch in range(self.epochs):
            if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
                self.data_loader.sampler.set_epoch(epoch)
            self.net.train()
            for i, (x, y) in enumerate(self.data_loader):
                x, y = x.to(self.device), y.to(self.device)
                loss = self.criterion(self.net(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                if i % 4 == 0:
                    if not dist.is_initialized() or dist.get_rank() == 0:
                        print(f"epoch {epoch} step {i} loss {loss.item():.4f}")
            accuracy = self.evaluate()
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch} val accuracy {accuracy:.3f}")
                torch.save(getattr(self.net, "module", self.net).state_dict(), os.path.join(self.ckpt_dir, f"epoch{epoch}.pt"))

    @torch.no_grad()
    def evaluate(self):
        self.net.eval()
        correct = total = 0
        for x, y in self.val_loader:
            x, y = x.to(self.device), y.to(self.device)
            correct += (self.net(x).argmax(dim=1) == y).sum().item()
            total += y.numel()
        return correct / total
