"""Fits a small regression through the Trainer of trainer.py, which builds its own model."""
import torch
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x.sum(dim=1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    trainer = Trainer(loader, epochs=3)
    trainer.fit("model.pt")


if __name__ == "__main__":
    main()
