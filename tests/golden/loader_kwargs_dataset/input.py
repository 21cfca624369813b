"""A module-level script whose loader arguments, the dataset among them, are one dict."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(96, 5)
targets = features.sum(1, keepdim=True)
loader_args = dict(
    dataset=TensorDataset(features, targets),
    batch_size=12,
    shuffle=True,
)
loader = DataLoader(**loader_args)

model = nn.Linear(5, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.3f}")
