"""Saves the model through the Trainer that keeps it, then loads the checkpoint into a fresh model."""
import torch
import torch.nn as nn

from data import build_loaders
from trainer import Trainer


def make_model():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))


if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader, _ = build_loaders(batch_size=8)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    trainer = Trainer(model, optimizer)
    trainer.fit(train_loader, epochs=2)
    torch.save(trainer.model.state_dict(), "model.pt")

    restored = make_model()
    restored.load_state_dict(torch.load("model.pt"))  # the plain model's keys, as a plain run saves them
    print("restored", sum(p.numel() for p in restored.parameters()), "parameters")
