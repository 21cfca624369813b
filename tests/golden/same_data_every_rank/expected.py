"""Teach a tiny RNN to spell one word, one character at a time: the whole training set is one sequence."""
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

torch.manual_seed(0)
chars = ["h", "e", "l", "o"]
x_ids = [0, 1, 2, 2]  # hell
y_ids = [1, 2, 2, 3]  # ello

inputs = torch.eye(len(chars))[x_ids]  # one-hot, one row per step
labels = torch.tensor(y_ids)


class CharRNN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.cell = nn.RNNCell(n, n)

    def forward(self, hidden, x):
        return self.cell(x.unsqueeze(0), hidden)


model = CharRNN(len(chars))
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)

for epoch in range(20):
    optimizer.zero_grad()
    loss = 0
    hidden = torch.zeros(1, len(chars))
    for x, label in zip(inputs, labels):  # the hidden state runs along the sequence
        hidden = model(hidden, x)
        loss = loss + criterion(hidden, label.unsqueeze(0))
    loss.backward()
    optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch + 1} loss {loss.item():.3f}")

if DISTRIBUTED:
    dist.destroy_process_group()
