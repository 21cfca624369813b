"""A tiny GAN: two models, two optimizers, one loop."""
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

LATENT = 4


def make_generator():
    return nn.Sequential(nn.Linear(LATENT, 16), nn.ReLU(), nn.Linear(16, 2))


def make_discriminator():
    return nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    real = torch.randn(256, 2) * 0.5 + 1.0
    dataset = TensorDataset(real)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    dataloader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)

    netG = make_generator().to(device)
    raw_netG = netG
    if DISTRIBUTED:
        netG = DDP(netG, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    netD = make_discriminator().to(device)
    raw_netD = netD
    if DISTRIBUTED:
        netD = DDP(netD, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for (batch,) in dataloader:
            batch = batch.to(device)
            noise = torch.randn(batch.size(0), LATENT, device=device)
            fake = netG(noise)

            optD.zero_grad()
            d_real = criterion(netD(batch), torch.ones(batch.size(0), 1, device=device))
            d_fake = criterion(netD(fake.detach()), torch.zeros(batch.size(0), 1, device=device))
            (d_real + d_fake).backward()
            optD.step()

            optG.zero_grad()
            g_loss = criterion(netD(fake), torch.ones(batch.size(0), 1, device=device))
            g_loss.backward()
            optG.step()
        if RANK == 0:
            print(f"epoch {epoch}: D {(d_real + d_fake).item():.3f} G {g_loss.item():.3f}")

    if RANK == 0:
        torch.save({"G": raw_netG.state_dict(), "D": raw_netD.state_dict()}, "gan.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
