"""Train, keep the best model on disk, and load it back for the final test through a helper."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.body = nn.Linear(n_in, n_hidden)
        self.head = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def model_save(fn):
    with open(fn, "wb") as f:
        torch.save([model, optimizer], f)


def model_load(fn):
    global model, optimizer
    with open(fn, "rb") as f:
        model, optimizer = torch.load(f, weights_only=False)


def evaluate(loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.cross_entropy(model(x), y, reduction="sum").item()
    return total / len(loader.dataset)


torch.manual_seed(0)
features = torch.randn(128, 8)
labels = features[:, :3].argmax(dim=1)
train_loader = DataLoader(TensorDataset(features[:96], labels[:96]), batch_size=8, shuffle=True)
val_loader = DataLoader(TensorDataset(features[96:], labels[96:]), batch_size=16)

model = Net(8, 16, 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
best = None
for epoch in range(3):
    model.train()
    for x, y in train_loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    val_loss = evaluate(val_loader)
    print(f"epoch {epoch}: val loss {val_loss:.4f}")
    if best is None or val_loss < best:
        model_save("best.pt")  # the whole model and its optimizer, pickled
        best = val_loss

# the best model back, for the final number
model_load("best.pt")
print(f"best val loss {evaluate(val_loader):.4f}")
