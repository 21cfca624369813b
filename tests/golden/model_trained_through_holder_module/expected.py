"""A denoising model trained through a module that holds it and computes the loss (diffusion style)."""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
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

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(17, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None].float() / 10], 1))


class DiffusionTrainer(nn.Module):
    """Noises a clean batch at random steps and returns the denoiser's loss."""

    def __init__(self, model, steps=10):
        super().__init__()
        self.model = model
        self.steps = steps
        self.register_buffer("alphas", torch.linspace(0.99, 0.5, steps))

    def forward(self, x0):
        t = torch.randint(self.steps, (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        a = self.alphas[t][:, None]
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        return F.mse_loss(self.model(xt, t), noise)


def ema(source, target, decay):
    src, tgt = source.state_dict(), target.state_dict()
    for key in src:
        tgt[key].copy_(tgt[key] * decay + src[key] * (1 - decay))


torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 16))
sampler = DistributedSampler(data) if DISTRIBUTED else None
loader = DataLoader(data, batch_size=16, shuffle=(sampler is None), drop_last=True, sampler=sampler)
model = Denoiser()
ema_model = copy.deepcopy(model)  # the averaged weights we sample from
trainer = DiffusionTrainer(model).to(device)
if DISTRIBUTED:
    trainer = DDP(trainer, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)

for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for (x0,) in loader:
        loss = trainer(x0.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema(model, ema_model, 0.99)
    if RANK == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")

if RANK == 0:
    torch.save({"model": model.state_dict(), "ema": ema_model.state_dict()}, "ckpt.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
