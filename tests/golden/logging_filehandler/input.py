import logging

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

log = logging.getLogger("train")
log.setLevel(logging.INFO)


def setup_logging(path):
    handler = logging.FileHandler(path, mode="w")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(handler)


def main():
    setup_logging("fh_train.log")
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(80, 3), torch.randn(80, 1)), batch_size=10, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        log.info("epoch %d loss %.4f", epoch, loss.item())
    with open("fh_summary.txt", "w") as f:
        f.write(f"final loss {loss.item():.4f}\n")


if __name__ == "__main__":
    main()
