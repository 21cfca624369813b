# A module-level training script: no functions at all.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 2
BATCH_SIZE = 16

torch.manual_seed(0)
x = torch.randn(256, 8)
y = (x.sum(dim=1, keepdim=True) > 0).float()
loader = DataLoader(TensorDataset(x, y), batch_size=BATCH_SIZE, shuffle=True)

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.BCEWithLogitsLoss()

for epoch in range(EPOCHS):
    total = 0.0
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / len(loader):.4f}")

torch.save(model.state_dict(), "model.pt")
print("saved model.pt")
