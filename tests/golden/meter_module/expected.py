import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import utils
from utils import AverageMeter


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def train_epoch(model, loader, optimizer):
    model.train()
    losses = AverageMeter()
    top1 = utils.AverageMeter("Acc@1", ":6.2f")
    for x, y in loader:
        output = model(x)
        loss = F.cross_entropy(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
        top1.update(output.argmax(1).eq(y).float().mean().item() * 100, x.size(0))
    return losses, top1


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


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(8, 4)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, 3):
        if sampler is not None:
            sampler.set_epoch(epoch)
        losses, top1 = train_epoch(model, loader, optimizer)
        losses.sum = reduce_over_ranks(losses.sum)
        losses.count = reduce_over_ranks(losses.count)
        losses.avg = losses.sum / losses.count
        top1.sum = reduce_over_ranks(top1.sum)
        top1.count = reduce_over_ranks(top1.count)
        top1.avg = top1.sum / top1.count
        if RANK == 0:
            print(f"epoch {epoch}: loss {losses.avg:.5f} acc {top1.avg:.2f} over {losses.count} samples")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
