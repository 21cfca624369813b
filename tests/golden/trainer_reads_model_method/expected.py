"""Trains a small generator through a Trainer class of trainer.py, which draws latents with the
generator's own sample_latent() method."""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from models import Generator
from trainer import Trainer

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8))
sampler = DistributedSampler(data) if DISTRIBUTED else None
loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)

generator = Generator(latent_dim=4, out_dim=8)
raw_generator = generator
if DISTRIBUTED:
    generator = DDP(generator, device_ids=[LOCAL_RANK] if next(generator.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
trainer = Trainer(generator, optimizer)
trainer.train(loader, epochs=2)
if RANK == 0:
    torch.save(raw_generator.state_dict(), "generator.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
