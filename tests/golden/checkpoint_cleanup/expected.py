import glob
import os
import shutil

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

OUT = "runs"

torch.manual_seed(0)
if RANK == 0:
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)  # start from an empty run folder
    os.makedirs(OUT, exist_ok=True)
if DISTRIBUTED:
    dist.barrier()  # the others wait until rank 0 has made the folder

dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=4, shuffle=(sampler is None), sampler=sampler)
model = nn.Linear(4, 1)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)


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


for epoch in range(3):
    if sampler is not None:
        sampler.set_epoch(epoch)
    total = 0.0
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    if RANK == 0:
        torch.save(raw_model.state_dict(), os.path.join(OUT, "{}.pkl".format(epoch)))
    # keep only the newest weights
    for name in glob.glob(os.path.join(OUT, "*.pkl")):
        if int(os.path.basename(name).split(".")[0]) < epoch:
            if RANK == 0:
                os.remove(name)
    global_total = reduce_over_ranks(total)
    if RANK == 0:
        print("epoch", epoch, "loss", global_total)

if RANK == 0:
    print("kept", sorted(os.listdir(OUT)))

if DISTRIBUTED:
    dist.destroy_process_group()
