"""Fine-tune a classifier: the backbone at a tenth of the head's learning rate (two parameter groups)."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.backbone(x))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args()

    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(128, 16), torch.randint(0, 4, (128,)))
    loader = DataLoader(dataset, batch_size=16, shuffle=True)
    model = Classifier()
    optimizer = torch.optim.SGD(
        [
            {"params": model.backbone.parameters(), "lr": args.lr / 10},
            {"params": model.head.parameters()},
        ],
        lr=args.lr,
        momentum=0.9,
    )
    for epoch in range(args.epochs):
        for x, y in loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
    torch.save(model.state_dict(), "classifier.pt")


if __name__ == "__main__":
    main()
