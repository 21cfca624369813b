"""Already correct DDP whose output is already rank-0 only: print is replaced on the other ranks by
the helper module, the log file's handler is added on rank 0 only (the other ranks log warnings
only), each rank's debug log has its own file, and checkpoints go through save_on_master."""
import argparse
import logging

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import misc

logger = logging.getLogger("silenced")


def setup_logging(args):
    if misc.is_main_process():
        logger.addHandler(logging.FileHandler("silenced_train.log", mode="w"))
        logger.setLevel(logging.INFO)
    else:
        logger.setLevel(logging.WARNING)
    debug = logging.getLogger("silenced.debug")
    debug.addHandler(logging.FileHandler(f"silenced_debug_rank{args.rank}.log", mode="w"))
    debug.setLevel(logging.DEBUG)
    debug.propagate = False
    return debug


def main(args):
    misc.init_distributed_mode(args)
    debug = setup_logging(args)
    print(f"world size {args.world_size}")
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    dataset = TensorDataset(x, x.sum(dim=1, keepdim=True))
    sampler = DistributedSampler(dataset) if args.distributed else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    model = nn.Linear(4, 1)
    model_without_ddp = model
    if args.distributed:
        model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for step, (xb, yb) in enumerate(loader):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            debug.debug("epoch %d step %d loss %.4f", epoch, step, loss.item())
        scheduler.step()
        logger.info("epoch %d lr %.4f", epoch, scheduler.get_last_lr()[0])
        print(f"epoch {epoch} done")
        misc.save_on_master({"model": model_without_ddp.state_dict(), "epoch": epoch}, "silenced.pt")
    if args.distributed:
        dist.barrier()
    checkpoint = torch.load("silenced.pt", map_location="cpu")
    model_without_ddp.load_state_dict(checkpoint["model"])
    print(f"reloaded epoch {checkpoint['epoch']}")
    if args.distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    main(parser.parse_args())
