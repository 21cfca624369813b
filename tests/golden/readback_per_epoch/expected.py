"""Trains a small generator-like model, saves one sample array per epoch through a helper, then reads
every epoch's samples back under another loop variable to write them as one stacked file."""
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

OUT = "samples"
EPOCHS = 3


def save_samples(model, fixed, save=False, path="samples.npy"):
    with torch.no_grad():
        out = model(fixed).numpy()
    if save:
        if RANK == 0:
            np.save(path, out)


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 4), torch.randn(96, 2))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=12, shuffle=(sampler is None), sampler=sampler)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    fixed = torch.randn(5, 4)
    os.makedirs(OUT, exist_ok=True)
    for epoch in range(EPOCHS):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        p = OUT + "/epoch_" + str(epoch + 1) + ".npy"
        save_samples(model, fixed, save=True, path=p)

    frames = []
    if DISTRIBUTED:
        dist.barrier()
    for e in range(EPOCHS):
        name = OUT + "/epoch_" + str(e + 1) + ".npy"
        frames.append(np.load(name))
    if RANK == 0:
        np.save(OUT + "/all_epochs.npy", np.stack(frames))

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
