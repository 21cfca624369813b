"""The training loop: builds the model, its optimizer and the data, and trains."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def run(epochs, batch_size=8, lr=0.05):
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    loader = DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch}: loss {loss.item():.4f}")
    torch.save(model.state_dict(), "model.pt")
