"""A small GAN whose models re-initialise their own weights after construction (`weight_init`, a
method of each class, and `nn.init` on one layer), with no seed for the model weights."""
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


def normal_init(m, mean, std):
    if isinstance(m, nn.Linear):
        m.weight.data.normal_(mean, std)
        m.bias.data.zero_()


class Generator(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.fc1 = nn.Linear(LATENT, d)
        self.fc2 = nn.Linear(d, 2)

    def weight_init(self, mean, std):
        for m in self._modules:
            normal_init(self._modules[m], mean, std)

    def forward(self, z):
        return self.fc2(torch.relu(self.fc1(z)))


class Discriminator(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.fc1 = nn.Linear(2, d)
        self.fc2 = nn.Linear(d, 1)

    def weight_init(self, mean, std):
        for m in self._modules:
            normal_init(self._modules[m], mean, std)

    def forward(self, x):
        return self.fc2(nn.functional.leaky_relu(self.fc1(x), 0.2))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    real = torch.randn(256, 2, generator=torch.Generator().manual_seed(0)) * 0.5 + 1.0
    dataset = TensorDataset(real)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)

    G = Generator()
    D = Discriminator()
    G.weight_init(mean=0.0, std=0.02)
    if DISTRIBUTED:
        G = DDP(G, device_ids=[LOCAL_RANK] if next(G.parameters()).is_cuda else None)
    D.weight_init(mean=0.0, std=0.02)
    nn.init.normal_(D.fc2.weight, 0.0, 0.02)
    if DISTRIBUTED:
        D = DDP(D, device_ids=[LOCAL_RANK] if next(D.parameters()).is_cuda else None)
    criterion = nn.BCEWithLogitsLoss()
    G_optimizer = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    D_optimizer = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))

    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for (x,) in loader:
            z = torch.randn(x.size(0), LATENT)
            fake = G(z)

            D_optimizer.zero_grad()
            d_loss = criterion(D(x), torch.ones(x.size(0), 1)) + criterion(D(fake.detach()), torch.zeros(x.size(0), 1))
            d_loss.backward()
            D_optimizer.step()

            G_optimizer.zero_grad()
            g_loss = criterion(D(fake), torch.ones(x.size(0), 1))
            g_loss.backward()
            G_optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch}: D {d_loss.item():.3f} G {g_loss.item():.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
