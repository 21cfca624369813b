"""A baseline that flattens the image."""
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, num_classes, in_features=3 * 8 * 8, hidden=64):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, x):
        return self.net(x)
