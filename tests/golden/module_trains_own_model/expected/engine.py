"""The training loop: builds the model, its optimizer and the data, and trains."""

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def run(epochs, batch_size=8, lr=0.05):
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if dist.is_initialized() else None
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    if dist.is_initialized():
        model = DDP(model, device_ids=[torch.cuda.current_device()] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for epoch in range(epochs):
        if isinstance(getattr(loader, "sampler", None), DistributedSampler):
            loader.sampler.set_epoch(epoch)
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if not dist.is_initialized() or dist.get_rank() == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f}")
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(getattr(model, "module", model).state_dict(), "model.pt")
