"""A small trainer: it owns the device, the optimizer and the checkpoint."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, loader, lr, ckpt):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        if dist.is_initialized():
            self.model = DDP(self.model, device_ids=[torch.cuda.current_device()] if self.device.type == "cuda" else None)
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        self.ckpt = ckpt

    def fit(self, epochs):
        for epoch in range(epochs):
            if isinstance(getattr(self.loader, "sampler", None), DistributedSampler):
                self.loader.sampler.set_epoch(epoch)
            self.model.train()
            total = 0.0
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = self.criterion(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            # the head's width is the model's own attribute
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch}: loss {total / len(self.loader):.4f} over {getattr(self.model, 'module', self.model).num_classes} classes")
                torch.save(getattr(self.model, "module", self.model).state_dict(), self.ckpt)
