import os

import torch as t
from torch import nn, optim
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader as DL
from torch.utils.data import TensorDataset as TD
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def run():
    if DISTRIBUTED:
        if t.cuda.is_available():
            t.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if t.cuda.is_available() else "gloo")

    t.manual_seed(0)
    dataset = TD(t.randn(50, 2), t.randn(50, 1))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    dl = DL(dataset, batch_size=10, shuffle=(sampler is None), sampler=sampler)
    net = nn.Linear(2, 1)
    raw_net = net
    if DISTRIBUTED:
        net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
    opt = optim.SGD(net.parameters(), lr=0.1)
    for ep in range(2):
        if sampler is not None:
            sampler.set_epoch(ep)
        for a, b in dl:
            opt.zero_grad()
            nn.functional.mse_loss(net(a), b).backward()
            opt.step()
        if RANK == 0:
            print("ep", ep)
    if RANK == 0:
        t.save(raw_net.state_dict(), "aliases.pt")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    run()
