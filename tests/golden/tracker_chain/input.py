"""Single-process training that reports to an experiment tracker: the run is named and configured
once it has started, and every epoch is logged to it."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import wandb


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 3)
    loader = DataLoader(TensorDataset(x, x.sum(dim=1, keepdim=True)), batch_size=8, shuffle=True)
    model = nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    run = wandb.init(project="chain")
    run.name = "linear-sgd"
    wandb.config.update({"lr": 0.05, "batch_size": 8})
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        wandb.log({"epoch": epoch, "loss": round(loss.item(), 4)})
    wandb.finish()
    print("done")


if __name__ == "__main__":
    main()
