"""nn.DataParallel when there is more than one GPU: a plain run keeps it, torchrun gets DDP."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.body(x))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(96, 8), torch.randint(0, 3, (96,))), batch_size=16, shuffle=True)
    model = Net().to(device)
    if torch.cuda.device_count() > 1:  # several GPUs in one process
        print("using", torch.cuda.device_count(), "GPUs")
        model = nn.DataParallel(model).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print("epoch", epoch, "loss", round(loss.item(), 4))
    torch.save(getattr(model, "module", model).state_dict(), "net.pt")


if __name__ == "__main__":
    main()
