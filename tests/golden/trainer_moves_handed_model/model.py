"""A tiny classifier that knows how to build its own optimizer."""

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 32), nn.GELU(), nn.Linear(32, classes))

    def forward(self, x):
        return self.net(x)

    def configure_optimizers(self, config):
        decay = [p for p in self.parameters() if p.dim() >= 2]
        no_decay = [p for p in self.parameters() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=config["learning_rate"])
