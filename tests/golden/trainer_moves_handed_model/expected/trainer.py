"""The trainer picks the device and moves the model it is handed there."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.dataloader import RandomSampler


class Trainer:
    def __init__(self, config, model, train_dataset):
        self.config = config
        self.model = model
        self.train_dataset = train_dataset
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = self.model.to(self.device)
        if dist.is_initialized():
            self.model = DDP(self.model, device_ids=[torch.cuda.current_device()] if next(self.model.parameters()).is_cuda else None)
        self.iter_num = 0

    def run(self):
        model, config = self.model, self.config
        self.optimizer = getattr(model, "module", model).configure_optimizers(config)
        train_loader = DataLoader(
            self.train_dataset,
            sampler=RandomSampler(self.train_dataset, replacement=True, num_samples=int(1e10), generator=torch.Generator().manual_seed(torch.initial_seed() + dist.get_rank()) if dist.is_initialized() else None),
            shuffle=False,
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
            loss = torch.nn.functional.cross_entropy(model(x), y)
            model.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            self.iter_num += 1
            if self.iter_num % config["log_every"] == 0:
                if not dist.is_initialized() or dist.get_rank() == 0:
                    print(f"iter {self.iter_num}: loss {loss.item():.5f}")
            if self.iter_num >= config["max_iters"]:
                break
