"""A module-level tutorial script: a tiny classifier on synthetic points, with an optional plot
whose library may be missing (one-line try/except, as tutorials write it)."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.utils.data as Data
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

EPOCHS = 2
BATCH_SIZE = 16

torch.manual_seed(1)
points = torch.randn(128, 2)
labels = (points[:, 0] * points[:, 1] > 0).long()
dataset = Data.TensorDataset(points, labels)
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = Data.DataLoader(dataset, batch_size=BATCH_SIZE, shuffle=(sampler is None), sampler=sampler)
if RANK == 0:
    print(points.size(), labels.size())

net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
if DISTRIBUTED:
    net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
loss_func = nn.CrossEntropyLoss()

try: from fancy_plots_not_installed import scatter; HAS_PLOTS = True
except ImportError: HAS_PLOTS = False; print('Install fancy_plots for the scatter plot')

for epoch in range(EPOCHS):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for step, (b_x, b_y) in enumerate(loader):
        loss = loss_func(net(b_x), b_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            if RANK == 0:
                print('Epoch:', epoch, '| step:', step, '| loss: %.4f' % loss.item())
            if HAS_PLOTS:
                scatter(points, net(points).argmax(1))

with torch.no_grad():
    accuracy = (net(points).argmax(1) == labels).float().mean().item()
if RANK == 0:
    print('accuracy: %.2f' % accuracy)

if DISTRIBUTED:
    dist.destroy_process_group()
