"""A classifier from the project's factory, then a small head trained on its outputs."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from factory import build


def make_head(device):
    head = nn.Linear(2, 1).to(device)
    return {"model": head, "optimizer": torch.optim.Adam(head.parameters(), lr=0.01)}


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(120, 6)
    labels, targets = (x[:, 0] > 0).long(), x[:, :1].clone()
    loader = DataLoader(TensorDataset(x, labels, targets), batch_size=20, shuffle=True)

    model, optimizer = build(hidden=16, device=device)
    for epoch in range(2):
        for xb, yb, _ in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"classifier epoch {epoch} loss {loss.item():.4f}")
    torch.save(model.state_dict(), "classifier.pt")

    parts = make_head(device)
    head, head_optimizer = parts["model"], parts["optimizer"]
    xs, ts = x.to(device), targets.to(device)
    for step in range(5):
        with torch.no_grad():
            logits = model(xs)
        head_optimizer.zero_grad()
        loss = F.mse_loss(head(logits), ts)
        loss.backward()
        head_optimizer.step()
    print(f"head loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
