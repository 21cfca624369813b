"""Fine-tune a small classifier head on a frozen backbone, with AdamW parameter groups."""

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


class Classifier(nn.Module):
    def __init__(self, n_features=16, n_classes=3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(n_features, 32), nn.ReLU())
        self.norm = nn.LayerNorm(32)
        self.head = nn.Linear(32, n_classes)

    def forward(self, x):
        return self.head(self.norm(self.backbone(x)))


def param_groups(model, weight_decay):
    """No weight decay on biases and norm weights; frozen parameters left out."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "norm" in name else decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    features = torch.randn(96, 16)
    labels = torch.randint(0, 3, (96,))
    dataset = TensorDataset(features, labels)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=12, shuffle=(sampler is None), sampler=sampler)

    model = Classifier()
    for p in model.backbone.parameters():
        p.requires_grad = False  # the backbone stays as it is
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)

    optimizer = torch.optim.AdamW(param_groups(model, weight_decay=0.05), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
        scheduler.step()
        if RANK == 0:
            print(f"epoch {epoch}: last loss {loss.item():.4f}")

    if RANK == 0:
        torch.save(raw_model.state_dict(), "head.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
