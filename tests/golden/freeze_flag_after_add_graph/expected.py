import argparse
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

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # tensorboard is optional: a stand-in that notes what it is given in a text file

    class SummaryWriter:
        def __init__(self, log_dir):
            os.makedirs(log_dir, exist_ok=True)
            self.path = os.path.join(log_dir, "events.txt")
            self.lines = []

        def add_graph(self, model, example):
            self.lines.append(f"graph {type(model).__name__} {tuple(model(example).shape)}\n")

        def add_scalar(self, tag, value, step):
            self.lines.append(f"{tag} {step} {value:.4f}\n")

        def close(self):
            with open(self.path, "w") as f:
                f.writelines(self.lines)


class Net(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(self.body(x))


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


def main(args):
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    writer = SummaryWriter(log_dir="runs/freeze") if RANK == 0 else None
    os.makedirs("./weights", exist_ok=True)

    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    sampler = DistributedSampler(data) if DISTRIBUTED else None
    loader = DataLoader(data, batch_size=8, shuffle=(sampler is None), sampler=sampler)

    model = Net()
    if RANK == 0:
        writer.add_graph(model, torch.zeros(2, 8))

    if os.path.exists(args.weights):
        model.load_state_dict(torch.load(args.weights, map_location="cpu"))
    else:
        if RANK == 0:
            print("no initial weights")

    # train the head only
    if args.freeze_layers:
        if RANK == 0:
            print("freeze every layer but fc")
        for name, para in model.named_parameters():
            if "fc" not in name:
                para.requires_grad_(False)
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)

    pg = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(pg, lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        avg_total = reduce_over_ranks(total, average=True)
        if RANK == 0:
            writer.add_scalar("loss", avg_total / len(loader), epoch)
            torch.save(raw_model.state_dict(), "./weights/model-{}.pth".format(epoch))
    if RANK == 0:
        writer.close()

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--weights", default="start.pth")
    parser.add_argument("--freeze-layers", type=bool, default=True)
    main(parser.parse_args())
