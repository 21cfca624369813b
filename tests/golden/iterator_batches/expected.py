"""A regressor that draws its batches by hand from the loader's iterator: a few optimizer steps per
learning-rate step, the last group of an epoch possibly shorter."""

import argparse
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

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="line", choices=["line", "wave"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--inner-steps", type=int, default=2)
opt = parser.parse_args()

torch.manual_seed(0)
x = torch.linspace(-1, 1, 48).unsqueeze(1)
if opt.data == "line":
    dataset = TensorDataset(x, 3 * x + 0.5)
elif opt.data == "wave":
    dataset = TensorDataset(x, torch.sin(3 * x))
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=4, shuffle=(sampler is None), sampler=sampler)

model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.9)

for epoch in range(opt.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    batches = iter(loader)
    i = 0
    while i < len(loader):
        # a few batches per learning-rate step
        j = 0
        while j < opt.inner_steps and i < len(loader):
            xb, yb = next(batches)
            i += 1
            j += 1
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
    if RANK == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")

if DISTRIBUTED:
    dist.destroy_process_group()
