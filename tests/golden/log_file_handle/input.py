"""A log file opened once and written as the run goes."""
import json

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    torch.manual_seed(0)
    state = {"lr": 0.1, "epochs": 3}
    log = open("log.txt", "w")
    log.write(json.dumps(state) + "\n")
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=state["lr"])
    for epoch in range(state["epochs"]):
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        state["epoch"] = epoch
        log.write(json.dumps(state) + "\n")
        log.flush()
    log.close()


if __name__ == "__main__":
    main()
