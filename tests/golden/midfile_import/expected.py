# A notebook exported as a script: data first, then the imports the model needs, then training.
import os

import torch
import torch.distributed as dist
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
features = torch.randn(128, 5)
labels = (features[:, 0] > 0).long()
train_dataset = TensorDataset(features, labels)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=16, shuffle=(train_sampler is None), sampler=train_sampler)
if RANK == 0:
    print("batches per epoch:", len(train_loader))

import time

import torch.nn as nn

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
start = time.time()
for epoch in range(2):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch}: loss {loss.item():.4f}")
elapsed = time.time() - start
if RANK == 0:
    torch.save(raw_model.state_dict(), "midfile_import.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
