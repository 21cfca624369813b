"""A regressor that draws its batches by hand from the loader's iterator: a few optimizer steps per
learning-rate step, the last group of an epoch possibly shorter."""

import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--data", default="line", choices=["line", "wave"])
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--inner-steps", type=int, default=2)
opt = parser.parse_args()

torch.manual_seed(0)
x = torch.linspace(-1, 1, 48).unsqueeze(1)
if opt.data == "line":
    dataset = TensorDataset(x, 3 * x + 0.5)
elif opt.data == "wave":
    dataset = TensorDataset(x, torch.sin(3 * x))
loader = DataLoader(dataset, batch_size=4, shuffle=True)

model = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.9)

for epoch in range(opt.epochs):
    batches = iter(loader)
    i = 0
    while i < len(loader):
        # a few batches per learning-rate step
        j = 0
        while j < opt.inner_steps and i < len(loader):
            xb, yb = next(batches)
            i += 1
            j += 1
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
