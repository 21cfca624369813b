"""A tiny normalising-flow block: an activation normalisation whose offset and scale come from the
first batch it sees, then an invertible-ish linear map."""

import torch
import torch.nn as nn


class ActNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, channels))
        self.logs = nn.Parameter(torch.zeros(1, channels))
        self.register_buffer("initialized", torch.tensor(0, dtype=torch.uint8))

    def initialize(self, x):
        with torch.no_grad():
            mean = x.mean(0, keepdim=True)
            std = x.std(0, keepdim=True)
            self.loc.data.copy_(-mean)
            self.logs.data.copy_(torch.log(1 / (std + 1e-6)))

    def forward(self, x):
        if self.training:  # renormalised on every training batch
            self.initialize(x)
            self.initialized.fill_(1)
        return (x + self.loc) * torch.exp(self.logs)


class Step(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = ActNorm(channels)
        self.mix = nn.Linear(channels, channels)

    def forward(self, x):
        return torch.tanh(self.mix(self.norm(x)))


class Flow(nn.Module):
    def __init__(self, channels, depth):
        super().__init__()
        self.steps = nn.ModuleList([Step(channels) for _ in range(depth)])
        self.head = nn.Linear(channels, 1)

    def forward(self, x):
        for step in self.steps:
            x = step(x)
        return self.head(x)
