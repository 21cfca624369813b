"""Iteration-based trainer: an endless stream of batches drawn with replacement."""

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import RandomSampler


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.train_dataset = train_dataset
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device)
        self.iter_num = 0

    def save(self, path):
        # the plain module's weights, wrapped or not
        raw_model = self.model.module if hasattr(self.model, "module") else self.model
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(raw_model.state_dict(), path)

    def run(self):
        model, config = self.model, self.config
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=config["learning_rate"], weight_decay=0.1)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10), generator=torch.Generator().manual_seed(torch.initial_seed() + dist.get_rank()) if dist.is_initialized() else None),
            shuffle=False,
            pin_memory=True,
            batch_size=config["batch_size"],
        )

        model.train()
        data_iter = iter(train_loader)
        while True:
            try:
                batch = next(data_iter)
            except StopIteration:
                data_iter = iter(train_loader)
                batch = next(data_iter)
            x, y = [t.to(self.device) for t in batch]
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            model.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config["grad_norm_clip"])
            self.optimizer.step()

            self.iter_num += 1
            if self.iter_num % config["log_every"] == 0:
                if not dist.is_initialized() or dist.get_rank() == 0:
                    print(f"iter {self.iter_num}: loss {loss.item():.5f}")
            if self.iter_num >= config["max_iters"]:
                break
        self.save(config["out"])
