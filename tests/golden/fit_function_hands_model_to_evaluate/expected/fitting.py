import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Regressor(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.width = width
        self.net = nn.Sequential(nn.Linear(5, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x):
        return self.net(x)


def evaluate(model, loader, device):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.mse_loss(model(x.to(device)), y.to(device), reduction="sum").item()
    model.train()
    print(f"evaluated a regressor {getattr(model, 'module', model).width} units wide")
    return total / len(loader.dataset)


def fit(epochs, out):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(80, 5), torch.randn(80, 1))
    test = TensorDataset(torch.randn(20, 5), torch.randn(20, 1))
    sampler = DistributedSampler(data) if dist.is_initialized() else None
    loader = DataLoader(data, batch_size=10, shuffle=(sampler is None), sampler=sampler)
    test_loader = DataLoader(test, batch_size=10)
    model = Regressor(width=12).to(device)
    if dist.is_initialized():
        model = DDP(model, device_ids=[torch.cuda.current_device()] if device.type == "cuda" else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(epochs):
        if isinstance(getattr(loader, "sampler", None), DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} test loss {evaluate(model, test_loader, device):.4f}")
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(getattr(model, "module", model).state_dict(), out)
