import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from evaluation import evaluate


def main():
    torch.manual_seed(0)
    train_set = TensorDataset(torch.randn(64, 6), torch.randint(0, 4, (64,)))
    val_set = TensorDataset(torch.randn(20, 6), torch.randint(0, 4, (20,)))
    train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
    val_loader = DataLoader(val_set, batch_size=8, shuffle=False)

    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    print(f"before training: accuracy {evaluate(model, val_loader) / len(val_set):.3f}")
    for epoch in range(2):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
        correct = evaluate(model=model, loader=val_loader)
        print(f"epoch {epoch}: accuracy {correct / len(val_set):.3f}")
    torch.save(model.state_dict(), "classifier.pt")


if __name__ == "__main__":
    main()
