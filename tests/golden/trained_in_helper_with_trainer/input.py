import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from trainer import Train


def load_dataset():
    # a fixed synthetic dataset: the same on every run
    gen = torch.Generator().manual_seed(0)
    ds = TensorDataset(torch.randn(64, 8, generator=gen), torch.randint(0, 3, (64,), generator=gen))
    return DataLoader(ds, batch_size=8, shuffle=True)


def train(train_loader):
    model = nn.Linear(8, 3)
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-2)
    trainer = Train(model, train_loader, optimizer, criterion)
    for epoch in range(3):
        epoch_loss = trainer.run_epoch()
        print(f"epoch {epoch}: loss {epoch_loss:.4f}")
    return model


def test(model, loader):
    model.eval()
    correct = 0
    with torch.no_grad():
        for inputs, labels in loader:
            correct += (model(inputs).argmax(1) == labels).sum().item()
    return correct


if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader = load_dataset()
    model = train(train_loader)  # trains and hands back the model
    # an optimizer built only to restore a checkpoint into: nothing is trained here
    optimizer = optim.Adam(model.parameters())
    test(model, train_loader)
