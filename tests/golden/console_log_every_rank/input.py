"""Logs its progress through the logging module (to stdout), once per epoch and at the end."""
import logging
import sys

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(
    stream=sys.stdout,
    level=logging.INFO,  # progress lines, one per epoch
    format="%(levelname)s %(message)s",
)
log = logging.getLogger("train")


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log.info("training %d samples", len(data))
    for epoch in range(3):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        log.info("epoch %d done", epoch)
    log.warning("no checkpoint is kept")


if __name__ == "__main__":
    main()
