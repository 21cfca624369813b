# -*- coding: latin-1 -*-
# Données synthétiques: entraînement très simple.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

LABEL = "résultat"


def main():
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(48, 2), torch.randn(48, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        print(LABEL.encode("ascii", "replace").decode(), epoch)  # époque


if __name__ == "__main__":
    main()
