"""The regression trainer: one pass over the data loader per epoch."""
import torch.nn.functional as F
from torch.utils.data.distributed import DistributedSampler

from .base import BaseTrainer


class Trainer(BaseTrainer):
    def __init__(self, model, optimizer, data_loader, **kwargs):
        super().__init__(model, optimizer, **kwargs)
        self.data_loader = data_loader

    def _train_epoch(self, epoch):
        if isinstance(getattr(self.data_loader, "sampler", None), DistributedSampler):
            self.data_loader.sampler.set_epoch(epoch)
        self.model.train()
        last = 0.0
        for x, y in self.data_loader:
            self.optimizer.zero_grad()
            loss = F.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            last = loss.item()
        return {"last batch loss": last}
