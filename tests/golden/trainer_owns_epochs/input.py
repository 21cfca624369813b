"""The entry: builds the data, the loader, the model, its optimizer and scheduler; the Learner of
learner.py keeps its own writer and log file, runs the epochs over the loader and saves."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from learner import Learner


def main():
    torch.manual_seed(0)
    x = torch.randn(96, 4)
    y = x.sum(1, keepdim=True)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True, drop_last=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    learner = Learner(model=model, optimizer=optimizer, scheduler=scheduler, epochs=3)
    learner.train(train_loader)


if __name__ == "__main__":
    main()
