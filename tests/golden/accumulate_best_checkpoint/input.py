"""Gradient accumulation, a model with its own helper method, and the first epoch's weights restored at the end."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

ACCUM_STEPS = 4


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)
        self.scale = 2.0

    def forward(self, x):
        return self.head(self.body(x)) * self.scale

    def predict(self, x):
        with torch.no_grad():
            return self.forward(x)


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 5), torch.randn(96, 1))
    loader = DataLoader(data, batch_size=8, shuffle=True)
    probe = torch.randn(4, 5, device=device)

    model = Regressor().to(device)
    model.load_state_dict(model.state_dict())  # warm start (a no-op here)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    snapshot = None
    for epoch in range(2):
        model.train()
        total = 0.0
        for step, (xb, yb) in enumerate(loader):
            xb, yb = xb.to(device), yb.to(device)
            loss = F.mse_loss(model(xb), yb) / ACCUM_STEPS
            loss.backward()
            total += loss.item()
            if (step + 1) % ACCUM_STEPS == 0:
                optimizer.step()
                optimizer.zero_grad()
        print(f"epoch {epoch} loss {total:.4f} scale {model.scale}")
        if epoch == 0:
            snapshot = copy.deepcopy(model.state_dict())

    model.load_state_dict(snapshot)
    model.eval()
    print("probe", [round(v, 3) for v in model.predict(probe).squeeze(1).tolist()])


if __name__ == "__main__":
    main()
