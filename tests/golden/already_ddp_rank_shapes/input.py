"""Already correct DDP, with the rank tests real scripts write: a flag for "distributed", a
master_process name, a leader test from the script's own module, an early return on the other ranks,
a stop decision the ranks share, and an epoch loss reduced before anyone reads it."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import dist_helpers

ddp = int(os.environ.get("RANK", -1)) != -1
if ddp:
    ddp_rank = int(os.environ["RANK"])
    ddp_local_rank = int(os.environ["LOCAL_RANK"])
    master_process = ddp_rank == 0
else:
    ddp_rank = ddp_local_rank = 0
    master_process = True


def log_epoch(epoch, epoch_loss):
    if not master_process:
        return
    print(f"epoch {epoch} loss {epoch_loss:.4f}")
    with open("shapes_history.txt", "a") as f:
        f.write(f"{epoch} {epoch_loss:.6f}\n")


def main():
    if ddp:
        if torch.cuda.is_available():
            torch.cuda.set_device(ddp_local_rank)
        dist.init_process_group("gloo")
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x @ torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
    train_set = TensorDataset(x, y)
    train_sampler = DistributedSampler(train_set) if ddp else None
    train_loader = DataLoader(train_set, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)

    model = nn.Linear(4, 1)
    raw_model = model
    if ddp:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    for epoch in range(30):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        epoch_loss = 0.0
        for xb, yb in train_loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item() * len(xb)
        epoch_loss = dist_helpers.reduce_sum(epoch_loss) / len(train_set)
        log_epoch(epoch, epoch_loss)
        if dist_helpers.is_leader():
            torch.save(raw_model.state_dict(), "shapes.pt")
        # every rank stops together: the decision is shared before the break
        stop = torch.tensor(float(loss.item() < 0.05))
        if ddp:
            dist.all_reduce(stop, op=dist.ReduceOp.MAX)
        if stop.item():
            break

    if ddp:
        dist.barrier()
    map_location = {"cuda:0": f"cuda:{ddp_local_rank}"} if torch.cuda.is_available() else "cpu"
    raw_model.load_state_dict(torch.load("shapes.pt", map_location=map_location))
    if master_process:
        print(f"stopped after epoch {epoch}")
    if ddp:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
