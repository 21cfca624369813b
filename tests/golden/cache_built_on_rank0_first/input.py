"""Train a small classifier on a feature set that is built once and cached on disk."""
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def build_features(n=512):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


# the features are expensive to build: keep them next to the script
fn = "features.cache.pt"
if os.path.exists(fn):
    print("Loading cached features...")
    dataset = torch.load(fn, weights_only=False)
else:
    print("Producing features...")
    dataset = build_features()
    torch.save(dataset, fn)

torch.manual_seed(0)
loader = DataLoader(dataset, batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")

torch.save(model.state_dict(), "model.pt")
