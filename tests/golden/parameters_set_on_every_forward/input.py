# Fit a small flow-style regressor; its ActNorm layers renormalise themselves on every training batch.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from flows import Flow

torch.manual_seed(0)
inputs = torch.randn(64, 4) * 3 + 1
targets = inputs.sum(dim=1, keepdim=True).sin()
loader = DataLoader(TensorDataset(inputs, targets), batch_size=8, shuffle=True)

model = Flow(4, depth=2)
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.MSELoss()

for epoch in range(3):
    total = 0.0
    for x, y in loader:
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: loss {total / len(loader):.4f}")

torch.save(model.state_dict(), "flow.pt")
