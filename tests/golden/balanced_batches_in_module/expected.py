"""Train on batches balanced across two datasets, for a fixed number of steps."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from batches import BalancedBatches

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def train(args):
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    os.makedirs(args.out, exist_ok=True)
    batches = BalancedBatches([(64, 0.5), (32, 0.5)], args.batch_size, os.path.join(args.out, "log_dataset.txt"))

    model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model.to(device), device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    else:
        model = nn.DataParallel(model).to(device)  # every visible GPU
    model.train()
    if RANK == 0:
        print(model)

    # only what requires grad goes to the optimizer
    trainable = []
    for p in filter(lambda p: p.requires_grad, model.parameters()):
        trainable.append(p)
    optimizer = torch.optim.Adam(trainable, lr=1e-3)
    criterion = nn.CrossEntropyLoss()

    g = torch.Generator().manual_seed(123)
    val_x, val_y = torch.randn(32, 8, generator=g), torch.randint(0, 4, (32,), generator=g)
    best = -1.0
    step = 0
    while True:
        x, y = batches.get_batch()
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
        model.zero_grad()
        loss.backward()
        optimizer.step()

        if (step + 1) % args.val_every == 0:
            with (open(os.path.join(args.out, "log_train.txt"), "a") if RANK == 0 else open(os.devnull, "a")) as log:
                model.eval()
                with torch.no_grad():
                    accuracy = (model(val_x.to(device)).argmax(1) == val_y.to(device)).float().mean().item()
                model.train()
                if accuracy > best:
                    best = accuracy
                    if RANK == 0:
                        torch.save(raw_model.state_dict(), os.path.join(args.out, "best.pth"))
                line = f"[{step + 1}/{args.steps}] accuracy {accuracy:.3f} best {best:.3f}"
                if RANK == 0:
                    print(line)
                log.write(line + "\n")
        step += 1
        if step == args.steps:
            break

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--val-every", type=int, default=4)
    parser.add_argument("--out", default="runs")
    args = parser.parse_args()
    torch.manual_seed(0)
    train(args)
