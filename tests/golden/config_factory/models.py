"""Architectures a config names by class."""
import torch.nn as nn


class MLPRegressor(nn.Module):
    def __init__(self, in_features, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)
