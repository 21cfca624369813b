"""Already DDP, but the wrap puts a container around the model."""
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


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 6), torch.randn(64, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)

    model = nn.Linear(6, 4)
    head = nn.Linear(4, 1)
    raw_model, raw_head = model, head
    if DISTRIBUTED:
        model = DDP(model)
        head = DDP(nn.Sequential(head, nn.Tanh()))  # a real composite: left alone
    optimizer = torch.optim.SGD(list(model.parameters()) + list(head.parameters()), lr=0.1)

    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(head(model(xb)), yb)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch} keys {sorted(getattr(model, 'module', model).state_dict())}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
