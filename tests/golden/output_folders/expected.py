"""Output folders made after an existence check, on what will be every rank."""
import os
from pathlib import Path

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

OUT = os.path.join("runs", "exp1")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    # one folder per experiment
    os.makedirs(OUT, exist_ok=True)
    ckpt_dir = Path(OUT) / "checkpoints"
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    os.makedirs("samples", exist_ok=True)  # generated images

    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    sampler = DistributedSampler(dataset, shuffle=False) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    model = nn.Linear(4, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        if RANK == 0:
            torch.save(raw_model.state_dict(), ckpt_dir / f"epoch{epoch}.pt")
    if RANK == 0:
        print(sorted(p.name for p in ckpt_dir.iterdir()))

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
