"""A small next-step model trained on random windows drawn from one long series each step."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

BLOCK = 8
BATCH = 4


def get_batch(series):
    ix = torch.randint(len(series) - BLOCK - 1, (BATCH * WORLD_SIZE,))[RANK * BATCH:(RANK + 1) * BATCH]  # one draw for all ranks; this rank's part
    x = torch.stack([series[i : i + BLOCK] for i in ix])
    y = torch.stack([series[i + 1 : i + 1 + BLOCK] for i in ix])
    return x, y


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(1337)
    series = torch.sin(torch.arange(400) / 7.0) + 0.1 * torch.randn(400)
    model = nn.Sequential(nn.Linear(BLOCK, 32), nn.Tanh(), nn.Linear(32, BLOCK))
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for step in range(30):
        xb, yb = get_batch(series)
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step % 10 == 0:
            if RANK == 0:
                print(f"step {step}: loss {loss.item():.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
