"""A CSV log whose class opens its file when it is built (csvlog.py)."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from csvlog import CSVLogger

torch.manual_seed(0)
x = torch.randn(64, 4)
loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

csv_logger = CSVLogger(fieldnames=["epoch", "loss"], filename="log.csv")  # one row per epoch
for epoch in range(3):
    for xb, yb in loader:
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    csv_logger.writerow({"epoch": epoch, "loss": f"{loss.item():.4f}"})
csv_logger.close()
