"""Trains a small generator-like model, saves one sample array per epoch through a helper, then reads
every epoch's samples back under another loop variable to write them as one stacked file."""
import os

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

OUT = "samples"
EPOCHS = 3


def save_samples(model, fixed, save=False, path="samples.npy"):
    with torch.no_grad():
        out = model(fixed).numpy()
    if save:
        np.save(path, out)


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 4), torch.randn(96, 2))
    loader = DataLoader(data, batch_size=12, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    fixed = torch.randn(5, 4)
    os.makedirs(OUT, exist_ok=True)
    for epoch in range(EPOCHS):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        p = OUT + "/epoch_" + str(epoch + 1) + ".npy"
        save_samples(model, fixed, save=True, path=p)

    frames = []
    for e in range(EPOCHS):
        name = OUT + "/epoch_" + str(e + 1) + ".npy"
        frames.append(np.load(name))
    np.save(OUT + "/all_epochs.npy", np.stack(frames))


if __name__ == "__main__":
    main()
