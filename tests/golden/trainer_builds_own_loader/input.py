"""Fits a small regressor with the reusable Trainer of trainer.py."""

import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

from trainer import Trainer, TrainerConfig

torch.manual_seed(42)
x = torch.randn(160, 6)
y = x @ torch.linspace(-1.0, 1.0, 6).unsqueeze(1) + 0.1 * torch.randn(160, 1)
dataset = TensorDataset(x, y)

device = "cuda" if torch.cuda.is_available() else "cpu"
model = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1)).to(device)
config = TrainerConfig(max_epochs=3, batch_size=16, ckpt_path="regressor.pt")
trainer = Trainer(model, dataset, config)
trainer.train()
