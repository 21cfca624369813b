"""Module-level entry: the loaders come from data.py, the Trainer of trainer.py owns the loops."""
import torch
import torch.nn as nn

from data import build_loaders
from trainer import Trainer

torch.manual_seed(0)
train_loader, _ = build_loaders(batch_size=8)  # the validation loader is not used here

model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

trainer = Trainer(model, optimizer)
trainer.fit(train_loader, epochs=2)
torch.save(model.state_dict(), "model.pt")
