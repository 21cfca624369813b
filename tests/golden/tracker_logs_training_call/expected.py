"""Training that logs each epoch to an experiment tracker straight from the call that trains the epoch."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import wandb


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


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


def train_epoch(model, loader, optimizer):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item() * xb.size(0)
    global_total = reduce_over_ranks(total)
    return global_total / len(loader.dataset)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x = torch.randn(64, 3)
    dataset = TensorDataset(x, x.sum(dim=1, keepdim=True))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(3, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    if RANK == 0:
        wandb.init(project="epochs")
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        train_epoch_result = train_epoch(model, loader, optimizer)
        if RANK == 0:
            wandb.log({"epoch": epoch, "loss": round(train_epoch_result, 4)})
    if RANK == 0:
        wandb.finish()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
