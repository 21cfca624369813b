"""WGAN-GP on made-up 2-D points: the critic's loss carries the gradient penalty."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch import autograd
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
if DISTRIBUTED:
    critic = DDP(critic, device_ids=[LOCAL_RANK] if next(critic.parameters()).is_cuda else None)
generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
raw_generator = generator
if DISTRIBUTED:
    generator = DDP(generator, device_ids=[LOCAL_RANK] if next(generator.parameters()).is_cuda else None)
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
gen_opt = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.9))
points = torch.randn(128, 2) * 0.5 + 1.0
dataset = TensorDataset(points)
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), drop_last=True, sampler=sampler)


def gradient_penalty(real, fake, weight=10.0):
    eta = torch.rand(real.size(0), 1)
    interpolated = (eta * real + (1 - eta) * fake).requires_grad_(True)
    scores = critic(interpolated)
    gradients = autograd.grad(outputs=scores, inputs=interpolated, grad_outputs=torch.ones_like(scores), create_graph=True)[0]
    return weight * ((gradients.norm(2, dim=1) - 1) ** 2).mean()


for epoch in range(3):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for step, (real,) in enumerate(loader):
        fake = generator(torch.randn(real.size(0), 4)).detach()
        # one backward for the whole critic loss, penalty included
        critic_loss = critic(fake).mean() - critic(real).mean() + gradient_penalty(real, fake)
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        if step % 2 == 0:
            gen_loss = -critic(generator(torch.randn(real.size(0), 4))).mean()
            gen_opt.zero_grad()
            gen_loss.backward()
            gen_opt.step()
    if RANK == 0:
        print(f"epoch {epoch} critic loss {critic_loss.item():.4f}")

if RANK == 0:
    torch.save(raw_generator.state_dict(), "generator.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
