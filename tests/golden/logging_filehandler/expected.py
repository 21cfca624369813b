import logging
import os

import torch
from torch import nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

log = logging.getLogger("train")
log.setLevel(logging.INFO)


def setup_logging(path):
    if RANK == 0:
        handler = logging.FileHandler(path, mode="w")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(handler)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    setup_logging("fh_train.log")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(80, 3), torch.randn(80, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=10, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(3, 1)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            log.info("epoch %d loss %.4f", epoch, loss.item())
    if RANK == 0:
        with open("fh_summary.txt", "w") as f:
            f.write(f"final loss {loss.item():.4f}\n")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
