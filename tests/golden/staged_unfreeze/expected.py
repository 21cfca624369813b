"""Transfer learning in two stages: train the new head on a frozen encoder, then fine-tune all of it."""

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

HEAD_EPOCHS = 2
EPOCHS = 4


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh())

    def forward(self, x):
        return self.layers(x)


class Model(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(24, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(160, 12)
    y = torch.randint(0, 4, (160,))
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)

    model = Model()
    for p in model.encoder.parameters():
        p.requires_grad = False
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        if sampler is not None:
            sampler.set_epoch(epoch)
        if epoch == HEAD_EPOCHS:
            # stage 2: release the encoder
            for p in raw_model.encoder.parameters():
                p.requires_grad = True
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "finetuned.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
