"""A forecasting model trained on batches that a method of the data's own class cuts by hand.

data_utils.Windows builds the windowed train/valid tensors in memory; its get_batches() generator
shuffles the windows with torch.randperm and slices the tensors it is handed: there is no DataLoader.
"""
import argparse
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from data_utils import Windows


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


class Forecaster(nn.Module):
    def __init__(self, m, hid):
        super().__init__()
        self.rnn = nn.GRU(m, hid, batch_first=True)
        self.head = nn.Linear(hid, m)

    def forward(self, x):
        _, h = self.rnn(x)
        return self.head(h[-1])


def train(data, X, Y, model, criterion, optimizer, batch_size):
    model.train()
    total_loss = 0.0
    n_samples = 0
    if DISTRIBUTED:  # each rank its own samples, as many on every rank: the ranks take the same steps
        X = X[RANK::WORLD_SIZE][: len(X) // WORLD_SIZE]
        Y = Y[RANK::WORLD_SIZE][: len(Y) // WORLD_SIZE]
    for X, Y in data.get_batches(X, Y, batch_size, True):
        model.zero_grad()
        output = model(X)
        loss = criterion(output, Y)
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
        n_samples += output.size(0) * data.m
    return total_loss / n_samples


def evaluate(data, X, Y, model, criterion, batch_size):
    model.eval()
    total_loss = 0.0
    n_samples = 0
    with torch.no_grad():
        for X, Y in data.get_batches(X, Y, batch_size, False):
            output = model(X)
            total_loss += criterion(output, Y).item()
            n_samples += output.size(0) * data.m
    return math.sqrt(total_loss / n_samples)


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--save", default="forecaster.pt")
args = parser.parse_args()

torch.manual_seed(54321)
Data = Windows(rows=160, cols=3, window=12, horizon=2)
model = Forecaster(Data.m, 16)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
criterion = nn.MSELoss(reduction="sum")
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

best_val = float("inf")
for epoch in range(1, args.epochs + 1):
    train_loss = train(Data, Data.train[0], Data.train[1], model, criterion, optimizer, args.batch_size)
    val_loss = evaluate(Data, Data.valid[0], Data.valid[1], model, criterion, args.batch_size)
    if RANK == 0:
        print(f"epoch {epoch} train loss {train_loss:.4f} valid rse {val_loss:.4f}")
    if val_loss < best_val:
        best_val = val_loss
        if RANK == 0:
            with open(args.save, "wb") as f:
                torch.save(raw_model.state_dict(), f)

if DISTRIBUTED:
    dist.destroy_process_group()
