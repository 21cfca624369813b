# A small trainer object of the script: it builds its model and optimizer, and is handed the loader.
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

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


class Trainer:
    def __init__(self, lr):
        self.model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        self.raw_model = self.model
        if DISTRIBUTED:
            self.model = DDP(self.model, device_ids=[LOCAL_RANK] if next(self.model.parameters()).is_cuda else None)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.loss_fn = nn.CrossEntropyLoss()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            if isinstance(loader.sampler, DistributedSampler):
                loader.sampler.set_epoch(epoch)
            for x, y in loader:
                loss = self.loss_fn(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


torch.manual_seed(0)
features = torch.randn(96, 6)
labels = features[:, :3].argmax(dim=1)
train_dataset = TensorDataset(features, labels)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=12, shuffle=(train_sampler is None), sampler=train_sampler)

trainer = Trainer(lr=0.1)
trainer.fit(train_loader, epochs=3)
with torch.no_grad():
    accuracy = (trainer.model(features).argmax(dim=1) == labels).float().mean().item()
if RANK == 0:
    print(f"accuracy {accuracy:.4f}")

if DISTRIBUTED:
    dist.destroy_process_group()
