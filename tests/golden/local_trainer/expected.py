# The training step lives in the script's own package: main() builds the model and hands it over.
import argparse
import os

import torch
from torch import nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from train_utils import evaluate, train_one_epoch


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def create_model(num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 32), nn.ReLU(), nn.Linear(32, num_classes))


def main(args):
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    device = torch.device(args.device if torch.cuda.is_available() else "cpu")
    images = torch.randn(96, 3, 8, 8)
    labels = (images.mean(dim=(1, 2, 3)) > 0).long()
    train_dataset = TensorDataset(images, labels)
    train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
    val_loader = DataLoader(TensorDataset(images[:32], labels[:32]), batch_size=8)

    model = create_model(num_classes=2)
    model.to(device)

    params_to_optimize = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(params_to_optimize, lr=args.lr, momentum=0.9)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10, gamma=0.5)

    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)

    best = 0.0
    for epoch in range(args.epochs):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        mean_loss, lr = train_one_epoch(model, optimizer, train_loader, device, lr_scheduler=lr_scheduler)
        acc = evaluate(model, val_loader, device=device)
        if RANK == 0:
            print(f"epoch {epoch} loss {mean_loss:.4f} lr {lr:.4f} acc {acc:.3f}")
        if acc >= best:
            best = acc
            if RANK == 0:
                torch.save({"model": raw_model.state_dict(), "optimizer": optimizer.state_dict()}, "best_model.pth")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--resume", default="")
    main(parser.parse_args())
