"""Train a small classifier on a feature set that is built once and cached on disk."""
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

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def build_features(n=512):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


# the features are expensive to build: keep them next to the script
fn = "features.cache.pt"
if DISTRIBUTED and RANK != 0:
    dist.barrier()  # the other ranks wait while rank 0 builds the cache
if os.path.exists(fn):
    if RANK == 0:
        print("Loading cached features...")
    dataset = torch.load(fn, weights_only=False, map_location="cpu")
else:
    if RANK == 0:
        print("Producing features...")
    dataset = build_features()
    if RANK == 0:
        torch.save(dataset, fn)
if DISTRIBUTED and RANK == 0:
    dist.barrier()

torch.manual_seed(0)
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}")

if RANK == 0:
    torch.save(raw_model.state_dict(), "model.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
