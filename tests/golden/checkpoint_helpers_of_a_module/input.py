import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import utils

parser = argparse.ArgumentParser()
parser.add_argument("--save-dir", default=".")
parser.add_argument("--name", default="linear.pt")
args = parser.parse_args()


def train(loader):
    model = nn.Linear(8, 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        utils.save_checkpoint(model, epoch, args)
    return model


if __name__ == "__main__":
    gen = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8, generator=gen), torch.randint(0, 3, (64,), generator=gen))
    loader = DataLoader(ds, batch_size=8, shuffle=True)
    model = train(loader)
    # back to the weights the helper saved last
    model, epoch = utils.load_checkpoint(model, args.save_dir, args.name)
