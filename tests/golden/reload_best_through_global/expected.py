"""Train, keep the best model on disk, and load it back for the final test through a helper."""
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

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


class Net(nn.Module):
    def __init__(self, n_in, n_hidden, n_out):
        super().__init__()
        self.body = nn.Linear(n_in, n_hidden)
        self.head = nn.Linear(n_hidden, n_out)

    def forward(self, x):
        return self.head(torch.relu(self.body(x)))


def model_save(fn):
    if RANK == 0:
        with open(fn, "wb") as f:
            torch.save([getattr(model, "module", model), optimizer], f)


def model_load(fn):
    global model, optimizer
    with open(fn, "rb") as f:
        model, optimizer = torch.load(f, weights_only=False, map_location="cpu")


def evaluate(loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += nn.functional.cross_entropy(model(x), y, reduction="sum").item()
    return total / len(loader.dataset)


torch.manual_seed(0)
features = torch.randn(128, 8)
labels = features[:, :3].argmax(dim=1)
train_dataset = TensorDataset(features[:96], labels[:96])
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
val_loader = DataLoader(TensorDataset(features[96:], labels[96:]), batch_size=16)

model = Net(8, 16, 3)
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
best = None
for epoch in range(3):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    model.train()
    for x, y in train_loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    val_loss = evaluate(val_loader)
    if RANK == 0:
        print(f"epoch {epoch}: val loss {val_loss:.4f}")
    if best is None or val_loss < best:
        model_save("best.pt")  # the whole model and its optimizer, pickled
        best = val_loss

# the best model back, for the final number
if DISTRIBUTED:
    dist.barrier()
model_load("best.pt")
if RANK == 0:
    print(f"best val loss {evaluate(val_loader):.4f}")

if DISTRIBUTED:
    dist.destroy_process_group()
