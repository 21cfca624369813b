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

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # tensorboard is optional: a stand-in that keeps scalars in a text file

    class SummaryWriter:
        def __init__(self, log_dir):
            self.path = f"{log_dir}.txt"
            self.lines = []

        def add_scalar(self, tag, value, step):
            self.lines.append(f"{tag} {step} {value:.4f}\n")

        def close(self):
            with open(self.path, "w") as f:
                f.writelines(self.lines)


def log_epoch(writer, epoch, loss):
    if RANK == 0:
        writer.add_scalar("epoch_loss", loss, epoch)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(96, 4), torch.randn(96, 2))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=12, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 2)
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = SummaryWriter("runs_tb") if RANK == 0 else None
    step = 0
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            if RANK == 0:
                writer.add_scalar("loss", loss.item(), step)
            step += 1
        log_epoch(writer, epoch, loss.item())
    if RANK == 0:
        writer.close()
        print("steps", step)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
