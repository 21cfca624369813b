# A notebook exported as a script: data first, then the imports the model needs, then training.
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(128, 5)
labels = (features[:, 0] > 0).long()
train_loader = DataLoader(TensorDataset(features, labels), batch_size=16, shuffle=True)
print("batches per epoch:", len(train_loader))

import time

import torch.nn as nn

model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
start = time.time()
for epoch in range(2):
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch}: loss {loss.item():.4f}")
elapsed = time.time() - start
torch.save(model.state_dict(), "midfile_import.pt")
