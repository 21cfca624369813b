"""Distil a random linear teacher into a small MLP, on fresh random inputs at every step."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

teacher = torch.randn(16, 4)  # the task, drawn once and never seeded
bias = 0.1 * torch.randn(4)
if DISTRIBUTED:
    dist.broadcast(teacher, src=0)
    dist.broadcast(bias, src=0)

student = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
raw_student = student
if DISTRIBUTED:
    student = DDP(student, device_ids=[LOCAL_RANK] if next(student.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(student.parameters(), lr=1e-2)

for step in range(100):
    inputs = torch.randn(64, 16)
    targets = inputs @ teacher + bias
    loss = nn.functional.mse_loss(student(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

if RANK == 0:
    print(f"trained {step + 1} steps")
    torch.save(raw_student.state_dict(), "student.pt")

if DISTRIBUTED:
    dist.destroy_process_group()
