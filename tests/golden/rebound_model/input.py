"""Train, save the weights, then evaluate fresh models built from them under the same name."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        self.num_classes = 3

    def forward(self, x):
        return self.body(x)


def load_model(path):
    model = Classifier()
    model.load_state_dict(torch.load(path))
    return model


def main():
    torch.manual_seed(0)
    x, y = torch.randn(96, 6), torch.randint(0, 3, (96,))
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)

    net = Classifier()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(net(xb), yb).backward()
            optimizer.step()
    torch.save(net.state_dict(), "net.pt")

    # a fresh model for evaluation, from the saved weights
    net = Classifier()
    net.load_state_dict(torch.load("net.pt"))
    net.eval()
    with torch.no_grad():
        acc = (net(x).argmax(1) == y).float().mean().item()
    print(f"accuracy {acc:.3f} over {net.num_classes} classes")

    net = load_model("net.pt")
    torch.save(net.state_dict(), "copy.pt")
    print(sorted(torch.load("copy.pt")))


if __name__ == "__main__":
    main()
