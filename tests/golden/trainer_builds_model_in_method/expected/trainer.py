import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


class Forecaster(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.hidden = hidden
        self.body = nn.Sequential(nn.Linear(6, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.body(x)


class Trainer:
    def __init__(self, args):
        self.args = args
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def train(self):
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(96, 6), torch.randn(96, 1))
        sampler = DistributedSampler(data) if dist.is_initialized() else None
        loader = DataLoader(data, batch_size=12, shuffle=(sampler is None), sampler=sampler)
        model = Forecaster(hidden=16)
        model = model.to(self.device)
        if dist.is_initialized():
            model = DDP(model, device_ids=[torch.cuda.current_device()] if self.device.type == "cuda" else None)
        optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
        if not dist.is_initialized() or dist.get_rank() == 0:
            print(f"training a forecaster with {getattr(model, 'module', model).hidden} hidden units")
        for epoch in range(self.args.epochs):
            if isinstance(getattr(loader, "sampler", None), DistributedSampler):
                loader.sampler.set_epoch(epoch)
            total = 0.0
            for x, y in loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = nn.functional.mse_loss(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                total += loss.item()
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch} mean batch loss {total / len(loader):.4f}")
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(getattr(model, "module", model).state_dict(), self.args.out)
