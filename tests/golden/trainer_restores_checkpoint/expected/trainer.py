"""The trainer of the script beside it: builds its recurrent classifier and optimizer itself, runs the
epochs over the loaders it is handed, keeps a checkpoint of every epoch (and can resume from one), and
puts back the weights of the best epoch at the end."""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


class RecurrentClassifier(nn.Module):
    def __init__(self, features, hidden_size, classes):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.GRUCell(features, hidden_size)
        self.head = nn.Linear(hidden_size, classes)

    def forward(self, x, h):
        for t in range(x.size(1)):
            h = self.cell(x[:, t], h)
        return self.head(h)


class Trainer:
    def __init__(self, config, train_loader, valid_loader):
        self.train_loader = train_loader
        self.valid_loader = valid_loader
        self.epochs = config.epochs
        self.start_epoch = 0
        self.best_valid_acc = 0.0
        self.resume = config.resume
        self.ckpt_path = os.path.join(config.ckpt_dir, "last.pt")
        os.makedirs(config.ckpt_dir, exist_ok=True)
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

        self.model = RecurrentClassifier(3, config.hidden_size, 3)
        self.model.to(self.device)
        if dist.is_initialized():
            self.model = DDP(self.model, device_ids=[torch.cuda.current_device()] if self.device.type == "cuda" else None)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)

    def reset(self, batch_size):
        return torch.zeros(batch_size, getattr(self.model, "module", self.model).hidden_size, device=self.device)

    def train(self):
        if self.resume:
            self.load_checkpoint(torch.load(self.resume, map_location=self.device))
        best = None
        for epoch in range(self.start_epoch, self.epochs):
            if isinstance(getattr(self.train_loader, "sampler", None), DistributedSampler):
                self.train_loader.sampler.set_epoch(epoch)
            train_loss, train_acc = self.train_one_epoch()
            valid_acc = self.validate()
            is_best = valid_acc > self.best_valid_acc
            self.best_valid_acc = max(valid_acc, self.best_valid_acc)
            mark = " [*]" if is_best else ""
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch + 1}/{self.epochs}: loss {train_loss:.3f} acc {train_acc:.1f} val acc {valid_acc:.1f}{mark}")
            state = self.save_checkpoint(epoch + 1)
            if is_best:
                best = copy.deepcopy(state)
        if best is not None:
            self.load_checkpoint(best)
            valid_acc = self.validate()
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"restored epoch {best['epoch']}: val acc {valid_acc:.1f}")

    def train_one_epoch(self):
        self.model.train()
        total_loss, correct, seen = 0.0, 0, 0
        for x, y in self.train_loader:
            x, y = x.to(self.device), y.to(self.device)
            logits = self.model(x, self.reset(x.size(0)))
            loss = F.cross_entropy(logits, y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            total_loss += loss.item() * x.size(0)
            correct += (logits.argmax(dim=1) == y).sum().item()
            seen += x.size(0)
        return total_loss / seen, 100.0 * correct / seen

    @torch.no_grad()
    def validate(self):
        self.model.eval()
        correct, seen = 0, 0
        for x, y in self.valid_loader:
            x, y = x.to(self.device), y.to(self.device)
            logits = self.model(x, self.reset(x.size(0)))
            correct += (logits.argmax(dim=1) == y).sum().item()
            seen += x.size(0)
        return 100.0 * correct / seen

    def save_checkpoint(self, epoch):
        state = {
            "epoch": epoch,
            "model_state": getattr(self.model, "module", self.model).state_dict(),
            "optim_state": self.optimizer.state_dict(),
            "best_valid_acc": self.best_valid_acc,
        }
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(state, self.ckpt_path)
        return state

    def load_checkpoint(self, ckpt):
        self.start_epoch = ckpt["epoch"]
        self.best_valid_acc = ckpt["best_valid_acc"]
        getattr(self.model, "module", self.model).load_state_dict(ckpt["model_state"])
        self.optimizer.load_state_dict(ckpt["optim_state"])
