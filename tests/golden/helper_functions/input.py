"""Training and evaluation in helper functions; the validation loader must stay unsharded."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def build_model(hidden):
    return nn.Sequential(nn.Linear(6, hidden), nn.ReLU(), nn.Linear(hidden, 2))


def train_one_epoch(model, loader, optimizer, device):
    model.train()
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    return loss.item()


@torch.no_grad()
def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    for xb, yb in loader:
        pred = model(xb.to(device)).argmax(dim=1)
        correct += (pred == yb.to(device)).sum().item()
        total += yb.numel()
    return correct / total


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x, y = torch.randn(240, 6), torch.randint(0, 2, (240,))
    train_loader = DataLoader(TensorDataset(x[:200], y[:200]), batch_size=20, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[200:], y[200:]), batch_size=20)

    model = build_model(hidden=12).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    best = 0.0
    for epoch in range(2):
        loss = train_one_epoch(model, train_loader, optimizer, device)
        acc = evaluate(model, val_loader, device)
        print(f"epoch {epoch}: loss {loss:.4f} val_acc {acc:.3f}")
        if acc >= best:
            best = acc
            torch.save(model.state_dict(), "best.pt")


if __name__ == "__main__":
    main()
