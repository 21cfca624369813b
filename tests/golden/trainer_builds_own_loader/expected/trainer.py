"""A small, reusable trainer: it is handed a model and a dataset, and does the rest."""

import math

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class TrainerConfig:
    max_epochs = 3
    batch_size = 8
    learning_rate = 3e-3
    grad_norm_clip = 1.0
    ckpt_path = None

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)


class Trainer:
    def __init__(self, model, train_dataset, config):
        self.model = model
        self.train_dataset = train_dataset
        self.config = config
        self.device = "cpu"
        if torch.cuda.is_available():
            self.device = torch.cuda.current_device()
            self.model = self.model.to(self.device)

    def save_checkpoint(self):
        model = self.model
        if not dist.is_initialized() or dist.get_rank() == 0:
            print(f"saving {self.config.ckpt_path}")
            torch.save(getattr(model, "module", model).state_dict(), self.config.ckpt_path)

    def train(self):
        model, config = self.model, self.config
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
        sampler = DistributedSampler(self.train_dataset) if dist.is_initialized() else None
        loader = DataLoader(self.train_dataset, shuffle=(sampler is None), pin_memory=True, batch_size=config.batch_size, sampler=sampler)

        for epoch in range(config.max_epochs):
            if isinstance(getattr(loader, "sampler", None), DistributedSampler):
                loader.sampler.set_epoch(epoch)
            model.train()
            losses = []
            for it, (x, y) in enumerate(loader):
                x, y = x.to(self.device), y.to(self.device)
                loss = torch.nn.functional.mse_loss(model(x), y)
                losses.append(loss.item())
                model.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_norm_clip)
                optimizer.step()
            mean = sum(losses) / len(losses)
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch + 1}: train loss {mean:.5f}, perplexity-like {math.exp(min(mean, 20)):.3f}")
            if config.ckpt_path is not None:
                self.save_checkpoint()
