"""A small regressor that shows its model (print, a logger, an f-string) before training."""
import logging

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, format="%(message)s")
logger = logging.getLogger("train")


def main():
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    print(model)  # the architecture, as a plain run shows it
    logger.info("model: %s", model)
    summary = f"{model!r} with {sum(p.numel() for p in model.parameters())} parameters"
    print(summary)
    print("training:", model.training)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    for epoch in range(2):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"epoch {epoch} done")
    print(str(model).splitlines()[0])


if __name__ == "__main__":
    main()
