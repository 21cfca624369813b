"""Transfer learning in two stages: train the new head on a frozen encoder, then fine-tune all of it."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

HEAD_EPOCHS = 2
EPOCHS = 4


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh())

    def forward(self, x):
        return self.layers(x)


class Model(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(24, n_classes)

    def forward(self, x):
        return self.head(self.encoder(x))


def main():
    torch.manual_seed(0)
    x = torch.randn(160, 12)
    y = torch.randint(0, 4, (160,))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

    model = Model()
    for p in model.encoder.parameters():
        p.requires_grad = False

    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        if epoch == HEAD_EPOCHS:
            # stage 2: release the encoder
            for p in model.encoder.parameters():
                p.requires_grad = True
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = criterion(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")
    torch.save(model.state_dict(), "finetuned.pt")


if __name__ == "__main__":
    main()
