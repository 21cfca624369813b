"""Train a linear regressor on synthetic data; the epoch's loss is printed straight from the call
that trains the epoch, as quick experiment scripts often do."""

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


def run_epoch(model, loader, opt):
    model.train()
    total = 0.0
    for x, y in loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        total += loss.item() * x.size(0)
    global_total = reduce_over_ranks(total)
    return global_total / len(loader.dataset)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    ds = TensorDataset(torch.randn(256, 4), torch.randn(256, 1))
    sampler = DistributedSampler(ds) if DISTRIBUTED else None
    loader = DataLoader(ds, batch_size=16, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        run_epoch_result = run_epoch(model, loader, opt)
        if RANK == 0:
            print(f"epoch {epoch}: loss {run_epoch_result:.4f}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "model.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
