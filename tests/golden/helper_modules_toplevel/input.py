"""Trains the regressor of model.py on the data of data.py with the loops of engine.py, at module level."""
import torch

from data import build_loaders
from engine import evaluate, train_one_epoch
from model import build_model

torch.manual_seed(0)
train_loader, val_loader = build_loaders(batch_size=8)
model = build_model()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)

for epoch in range(3):
    train_one_epoch(model, train_loader, optimizer, epoch)
    val_loss = evaluate(model, val_loader)
    print(f"epoch {epoch}: val {val_loss:.4f}")

torch.save(model.state_dict(), "model.pt")
