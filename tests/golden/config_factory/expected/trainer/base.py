"""The epoch loop, logging and checkpoints every trainer shares; a subclass trains one epoch."""
import os

import torch
import torch.distributed as dist


class BaseTrainer:
    def __init__(self, model, optimizer, epochs, save_dir, save_period=1):
        self.model = model
        self.optimizer = optimizer
        self.epochs = epochs
        self.save_dir = save_dir
        self.save_period = save_period

    def _train_epoch(self, epoch):
        raise NotImplementedError

    def train(self):
        os.makedirs(self.save_dir, exist_ok=True)
        for epoch in range(1, self.epochs + 1):
            log = self._train_epoch(epoch)
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch}: " + ", ".join(f"{k} {v:.4f}" for k, v in log.items()))
            if epoch % self.save_period == 0:
                self._save_checkpoint(epoch)

    def _save_checkpoint(self, epoch):
        state = {"epoch": epoch, "state_dict": getattr(self.model, "module", self.model).state_dict(), "optimizer": self.optimizer.state_dict()}
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(state, os.path.join(self.save_dir, f"checkpoint-epoch{epoch}.pth"))
