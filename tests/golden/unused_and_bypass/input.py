"""Already DDP, with two defects that only show up at run time: an unused head and a forward around the wrapper."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.head = nn.Linear(8, 1)
        self.aux_head = nn.Linear(8, 3)  # left over from an experiment

    def forward(self, x):
        h = self.act(self.body(x))
        if self.training:
            h = h * 1.0
        return self.head(h)


def main():
    if DISTRIBUTED:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    probe = torch.randn(8, 4)

    model = TwoHeads()
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = F.mse_loss(raw_model(xb), yb)  # around the wrapper: no gradient sync
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            probe_out = raw_model(probe).mean().item()
        if RANK == 0:
            print(f"epoch {epoch} probe {probe_out:.4f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
