"""A DDP script that builds its optimizer (and a scheduler on it) before its own wrap."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


class Net(nn.Module):
    def __init__(self, n_classes=2):
        super().__init__()
        self.n_classes = n_classes
        self.fc = nn.Linear(8, n_classes)

    def forward(self, x):
        return self.fc(x)


def main():
    if DISTRIBUTED:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = Net()
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)  # halves the rate each epoch
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        correct = torch.zeros(2)
        for x, y in loader:
            optimizer.zero_grad()
            out = model(x)
            loss = nn.functional.cross_entropy(out, y)
            loss.backward()
            optimizer.step()
            correct[0] += (out.argmax(1) == y).sum()
            correct[1] += y.numel()
        scheduler.step()
        if DISTRIBUTED:
            dist.all_reduce(correct)
        if RANK == 0:
            print(f"epoch {epoch} acc {correct[0] / correct[1]:.3f} classes {raw_model.n_classes}")
    if RANK == 0:
        torch.save(raw_model.state_dict(), "model.pt")
    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
