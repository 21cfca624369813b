"""Train, save the weights, then evaluate fresh models built from them under the same name."""
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


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        self.num_classes = 3

    def forward(self, x):
        return self.body(x)


def load_model(path):
    model = Classifier()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    return model


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    x, y = torch.randn(96, 6), torch.randint(0, 3, (96,))
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)

    net = Classifier()
    raw_net = net
    if DISTRIBUTED:
        net = DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(2):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for xb, yb in loader:
            optimizer.zero_grad()
            F.cross_entropy(net(xb), yb).backward()
            optimizer.step()
    if RANK == 0:
        torch.save(raw_net.state_dict(), "net.pt")

    # a fresh model for evaluation, from the saved weights
    net = Classifier()
    if DISTRIBUTED:
        dist.barrier()
    net.load_state_dict(torch.load("net.pt", map_location="cpu"))
    net.eval()
    with torch.no_grad():
        acc = (net(x).argmax(1) == y).float().mean().item()
    if RANK == 0:
        print(f"accuracy {acc:.3f} over {net.num_classes} classes")

    net = load_model("net.pt")
    if RANK == 0:
        torch.save(net.state_dict(), "copy.pt")
        print(sorted(torch.load("copy.pt", map_location="cpu")))

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
