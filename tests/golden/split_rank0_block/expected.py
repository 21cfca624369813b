"""Already DDP, except for the rank-0 blocks: rank 0 saves, then waits in a barrier the other ranks
never reach, then reports; and rank 0 alone waits for the others before it reads the results."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main():
    if DISTRIBUTED:
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    dataset = TensorDataset(x, x.mean(dim=1, keepdim=True))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(xb), yb).backward()
            optimizer.step()
        torch.save({"epoch": epoch}, f"split_progress_rank{RANK}.pt")
        if RANK == 0:
            torch.save(raw_model.state_dict(), "split.pt")
        if DISTRIBUTED:
            dist.barrier()  # the others may read split.pt from here on
        if RANK == 0:
            print(f"epoch {epoch} saved")
    if DISTRIBUTED:
        dist.barrier()
    if RANK == 0:
        epochs = [torch.load(f"split_progress_rank{r}.pt", map_location="cpu")["epoch"] for r in range(WORLD_SIZE)]
        print(f"every rank finished epoch {max(epochs)}")
    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
