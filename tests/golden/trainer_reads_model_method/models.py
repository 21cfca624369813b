import torch
import torch.nn as nn


class Generator(nn.Module):
    """Maps latent codes to samples; draws its own codes."""

    def __init__(self, latent_dim, out_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.net = nn.Sequential(nn.Linear(latent_dim, 16), nn.ReLU(), nn.Linear(16, out_dim))

    def sample_latent(self, n):
        return torch.randn(n, self.latent_dim)

    def forward(self, z):
        return self.net(z)
