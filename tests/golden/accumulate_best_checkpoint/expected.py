"""Gradient accumulation, a model with its own helper method, and the first epoch's weights restored at the end."""
import copy
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

ACCUM_STEPS = 4


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(5, 16), nn.ReLU())
        self.head = nn.Linear(16, 1)
        self.scale = 2.0

    def forward(self, x):
        return self.head(self.body(x)) * self.scale

    def predict(self, x):
        with torch.no_grad():
            return self.forward(x)


def reduce_over_ranks(value, average=False):
    """`value` summed over every rank (averaged with `average=True`); `value` itself in a single process."""
    if not DISTRIBUTED:
        return value
    total = torch.as_tensor(value, dtype=torch.float64).detach().cpu().clone()
    dist.all_reduce(total)
    if average:
        total /= WORLD_SIZE
    if isinstance(value, torch.Tensor):  # the same kind of value back: `.item()` still works on it
        return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
    if type(value).__module__ == "numpy":
        return total.numpy()
    if isinstance(value, int) and not average:  # a count summed stays a whole number
        return int(total.item())
    return total.item() if total.dim() == 0 else total.tolist()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(96, 5), torch.randn(96, 1))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    probe = torch.randn(4, 5, device=device)

    model = Regressor().to(device)
    model.load_state_dict(model.state_dict())  # warm start (a no-op here)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    snapshot = None
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        total = 0.0
        for step, (xb, yb) in enumerate(loader):
            if DISTRIBUTED:
                model.require_backward_grad_sync = (step + 1) % ACCUM_STEPS == 0
            xb, yb = xb.to(device), yb.to(device)
            loss = F.mse_loss(model(xb), yb) / ACCUM_STEPS
            loss.backward()
            total += loss.item()
            if (step + 1) % ACCUM_STEPS == 0:
                optimizer.step()
                optimizer.zero_grad()
        global_total = reduce_over_ranks(total)
        if RANK == 0:
            print(f"epoch {epoch} loss {global_total:.4f} scale {raw_model.scale}")
        if epoch == 0:
            snapshot = copy.deepcopy(raw_model.state_dict())

    raw_model.load_state_dict(snapshot)
    model.eval()
    if RANK == 0:
        print("probe", [round(v, 3) for v in raw_model.predict(probe).squeeze(1).tolist()])

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
