"""A forecasting model trained on batches that a method of the data's own class cuts by hand.

data_utils.Windows builds the windowed train/valid tensors in memory; its get_batches() generator
shuffles the windows with torch.randperm and slices the tensors it is handed: there is no DataLoader.
"""
import argparse
import math

import torch
import torch.nn as nn

from data_utils import Windows


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
criterion = nn.MSELoss(reduction="sum")
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

best_val = float("inf")
for epoch in range(1, args.epochs + 1):
    train_loss = train(Data, Data.train[0], Data.train[1], model, criterion, optimizer, args.batch_size)
    val_loss = evaluate(Data, Data.valid[0], Data.valid[1], model, criterion, args.batch_size)
    print(f"epoch {epoch} train loss {train_loss:.4f} valid rse {val_loss:.4f}")
    if val_loss < best_val:
        best_val = val_loss
        with open(args.save, "wb") as f:
            torch.save(model.state_dict(), f)
