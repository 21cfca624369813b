"""The entry: builds the model, optimizer and loader; the Trainer of trainer.py trains, saves and logs."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer


def main():
    torch.manual_seed(0)
    x = torch.randn(72, 4)
    y = x.mean(1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=9, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    trainer = Trainer(model, optimizer)
    for epoch in range(2):
        loss = trainer.train_epoch(loader)
        trainer.log(epoch, loss)
        trainer.save()


if __name__ == "__main__":
    main()
