# A small MLP kept as an nn.Sequential: its first layer is a frozen random projection,
# and the script reads its layers by index after training.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def freeze(layer):
    for p in layer.parameters():
        p.requires_grad = False


def make_data(n=128, dim=10):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, dim, generator=g)
    y = (x[:, :3].sum(dim=1, keepdim=True) > 0).float()
    return TensorDataset(x, y)


def main():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(10, 32),  # random projection, never trained
        nn.ReLU(),
        nn.Linear(32, 16),
        nn.ReLU(),
        nn.Linear(16, 1),
    )
    freeze(model[0])

    loader = DataLoader(make_data(), batch_size=16, shuffle=True)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(4):
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        print(f"epoch {epoch} loss {total / len(loader):.4f}")

    print(f"{len(model)} layers")
    for i, layer in enumerate(model):
        if isinstance(layer, nn.Linear):
            print(i, tuple(layer.weight.shape), f"{layer.weight.norm().item():.3f}")
    torch.save(model[-1].state_dict(), "head.pt")


if __name__ == "__main__":
    main()
