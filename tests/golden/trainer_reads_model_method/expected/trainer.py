import torch
import torch.distributed as dist
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    """Fits the generator to rebuild each sample from its first half, with latent noise added."""

    def __init__(self, generator, optimizer):
        self.G = generator
        self.optimizer = optimizer
        self.steps = 0

    def _step(self, x):
        z = getattr(self.G, "module", self.G).sample_latent(x.size(0))
        loss = (self.G(x[:, :4] + 0.1 * z) - x).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.steps += 1
        return loss.item()

    def train(self, loader, epochs):
        for epoch in range(epochs):
            if isinstance(getattr(loader, "sampler", None), DistributedSampler):
                loader.sampler.set_epoch(epoch)
            for (x,) in loader:
                self._step(x)
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch}: {self.steps} steps")
        with torch.no_grad():
            fixed = self.G(getattr(self.G, "module", self.G).sample_latent(4))
        if not dist.is_initialized() or dist.get_rank() == 0:
            print("samples", tuple(fixed.shape))
