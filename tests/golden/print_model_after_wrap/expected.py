"""A small regressor that shows its model (print, a logger, an f-string) before training."""
import logging
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

logging.basicConfig(level=logging.INFO if RANK == 0 else logging.WARNING, format="%(message)s")
logger = logging.getLogger("train")


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    if RANK == 0:
        print(raw_model)  # the architecture, as a plain run shows it
    logger.info("model: %s", raw_model)
    summary = f"{raw_model!r} with {sum(p.numel() for p in model.parameters())} parameters"
    if RANK == 0:
        print(summary)
        print("training:", model.training)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if RANK == 0:
            print(f"epoch {epoch} done")
    if RANK == 0:
        print(str(raw_model).splitlines()[0])

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
