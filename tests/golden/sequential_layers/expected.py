# A small MLP kept as an nn.Sequential: its first layer is a frozen random projection,
# and the script reads its layers by index after training.
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


def freeze(layer):
    for p in layer.parameters():
        p.requires_grad = False


def make_data(n=128, dim=10):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, dim, generator=g)
    y = (x[:, :3].sum(dim=1, keepdim=True) > 0).float()
    return TensorDataset(x, y)


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
    model = nn.Sequential(
        nn.Linear(10, 32),  # random projection, never trained
        nn.ReLU(),
        nn.Linear(32, 16),
        nn.ReLU(),
        nn.Linear(16, 1),
    )
    freeze(model[0])
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)

    dataset = make_data()
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(4):
        if sampler is not None:
            sampler.set_epoch(epoch)
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        avg_total = reduce_over_ranks(total, average=True)
        if RANK == 0:
            print(f"epoch {epoch} loss {avg_total / len(loader):.4f}")

    if RANK == 0:
        print(f"{len(raw_model)} layers")
    for i, layer in enumerate(raw_model):
        if isinstance(layer, nn.Linear):
            if RANK == 0:
                print(i, tuple(layer.weight.shape), f"{layer.weight.norm().item():.3f}")
    if RANK == 0:
        torch.save(raw_model[-1].state_dict(), "head.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
