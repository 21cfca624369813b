"""Classifies noisy prototypes with the iteration-based Trainer of trainer.py."""

import torch
import torch.nn as nn
from torch.utils.data import TensorDataset

from trainer import Trainer


def make_dataset(n=120, classes=4, dim=10):
    g = torch.Generator().manual_seed(7)
    prototypes = torch.randn(classes, dim, generator=g)
    labels = torch.randint(0, classes, (n,), generator=g)
    return TensorDataset(prototypes[labels] + 0.3 * torch.randn(n, dim, generator=g), labels)


if __name__ == "__main__":
    torch.manual_seed(3)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.Linear(32, 4)).to(device)
    config = {
        "learning_rate": 1e-2,
        "batch_size": 8,
        "grad_norm_clip": 1.0,
        "max_iters": 24,
        "log_every": 6,
        "out": "classifier.pt",
    }
    trainer = Trainer(config, model, make_dataset())
    trainer.run()
