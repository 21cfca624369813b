"""The training side of the script beside it: a Learner that creates its own writer and log file,
runs its own epochs over the loader it is handed, and saves its config and a checkpoint at the end."""
import logging
import os

import torch.distributed as dist
import torch.nn as nn
from torch.utils.data.distributed import DistributedSampler

from helpers import save_checkpoint, save_config

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # tensorboard is optional: a stand-in that appends scalars to a text file

    class SummaryWriter:
        def __init__(self, log_dir):
            self.log_dir = log_dir
            os.makedirs(log_dir, exist_ok=True)

        def add_scalar(self, tag, value, global_step):
            with open(os.path.join(self.log_dir, "scalars.txt"), "a") as f:
                f.write(f"{tag} {global_step} {value:.4f}\n")


class Learner:
    def __init__(self, model, optimizer, scheduler, epochs, out="runs/learner"):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.epochs = epochs
        self.writer = SummaryWriter(out) if not dist.is_initialized() or dist.get_rank() == 0 else None
        if not dist.is_initialized() or dist.get_rank() == 0:
            logging.basicConfig(filename=os.path.join(self.writer.log_dir, "training.log"), level=logging.INFO)

    def train(self, train_loader):
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_config(self.writer.log_dir, {"epochs": self.epochs, "lr": self.scheduler.get_last_lr()[0]})
        step = 0
        for epoch in range(self.epochs):
            if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):
                train_loader.sampler.set_epoch(epoch)
            for x, y in train_loader:
                loss = nn.functional.mse_loss(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                if not dist.is_initialized() or dist.get_rank() == 0:
                    self.writer.add_scalar("loss", loss.item(), global_step=step)
                step += 1
            self.scheduler.step()
            logging.info(f"epoch {epoch}: loss {loss.item():.4f}")
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_checkpoint(
                {"epochs": self.epochs, "state_dict": getattr(self.model, "module", self.model).state_dict()},
                os.path.join(self.writer.log_dir, "checkpoint.pt"),
            )
            logging.info(f"checkpoint saved in {self.writer.log_dir}")
