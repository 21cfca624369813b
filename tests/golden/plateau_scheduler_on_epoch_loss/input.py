"""Fit a small regressor; the learning rate halves whenever the epoch's mean training loss stops falling."""
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(512, 8)
y = x[:, :2].sum(1, keepdim=True) + 0.5 * torch.randn(512, 1)
loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
# patience 0: a single epoch without progress halves the learning rate
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, patience=0, factor=0.5)

for epoch in range(8):
    epoch_loss = []
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        epoch_loss.append(loss.item())
    scheduler.step(np.mean(epoch_loss))
    print(f"epoch {epoch} lr {optimizer.param_groups[0]['lr']:.4f}")

torch.save(model.state_dict(), "regressor.pt")
