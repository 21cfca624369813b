import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def train(epoch, model, loader, optimizer, log):
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    log.write(f"{epoch},{total:.6f}\n")
    log.flush()


def main():
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=4, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    train_log = open("train.csv", "w")
    for epoch in range(2):
        train(epoch, model, loader, optimizer, train_log)
    train_log.close()


if __name__ == "__main__":
    main()
