"""Builds the model and its optimizer from a few settings (the project's own module)."""
import torch
import torch.nn as nn


def build(hidden, device, lr=0.05):
    model = nn.Sequential(nn.Linear(6, hidden), nn.ReLU(), nn.Linear(hidden, 2)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    return model, optimizer
