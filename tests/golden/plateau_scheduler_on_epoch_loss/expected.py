"""Fit a small regressor; the learning rate halves whenever the epoch's mean training loss stops falling."""
import os

import numpy as np
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

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x[:, :2].sum(1, keepdim=True) + 0.5 * torch.randn(512, 1)
dataset = TensorDataset(x, y)
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
# patience 0: a single epoch without progress halves the learning rate
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)


def reduce_over_ranks(value, average=False):
    """`value` summed over every rank (averaged with `average=True`); `value` itself in a single process."""
    if not DISTRIBUTED:
        return value
    total = torch.as_tensor(value, dtype=torch.float64).detach().cpu().clone()
    dist.all_reduce(total)
    if average:
        total /= WORLD_SIZE
    if isinstance(value, torch.Tensor):  # the same kind of value back: `.item()` still works on it
        return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
    if type(value).__module__ == "numpy":
        return total.numpy()
    if isinstance(value, int) and not average:  # a count summed stays a whole number
        return int(total.item())
    return total.item() if total.dim() == 0 else total.tolist()


for epoch in range(8):
    if sampler is not None:
        sampler.set_epoch(epoch)
    epoch_loss = []
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss.append(loss.item())
    avg_epoch_loss = reduce_over_ranks(np.mean(epoch_loss), average=True)
    scheduler.step(avg_epoch_loss)
    if RANK == 0:
        print(f"epoch {epoch} lr {optimizer.param_groups[0]['lr']:.4f}")

if RANK == 0:
    torch.save(raw_model.state_dict(), "regressor.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
