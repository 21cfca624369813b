"""A script half-way to distributed: it reads its rank and keeps evaluation and saving on rank 0."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from checkpoints import load_checkpoint, save_checkpoint

rank = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    loss = F.mse_loss(model(x), y).item()
    model.train()
    return loss


def unwrap(model):
    return model.module if hasattr(model, "module") else model


def weight_norm(model):
    return sum(p.norm().item() for p in unwrap(model).parameters())


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x, y = torch.randn(128, 5), torch.randn(128, 1)
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)

    model = Regressor()
    start = 0
    if os.path.exists("resume.pt"):
        start = load_checkpoint(model, "resume.pt") + 1
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(start, 3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            F.mse_loss(model(xb), yb).backward()
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch} val {evaluate(raw_model, x, y):.4f} norm {weight_norm(model):.3f}")
            if epoch == 0:
                save_checkpoint(raw_model, epoch, "first.pt")

    # back to the weights of the first epoch, to compare
    if DISTRIBUTED:
        dist.barrier()
    epoch = load_checkpoint(raw_model, "first.pt")
    if rank == 0:
        print(f"epoch {epoch} again: val {evaluate(raw_model, x, y):.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
