import torch


class Trainer:
    """Fits the generator to rebuild each sample from its first half, with latent noise added."""

    def __init__(self, generator, optimizer):
        self.G = generator
        self.optimizer = optimizer
        self.steps = 0

    def _step(self, x):
        z = self.G.sample_latent(x.size(0))
        loss = (self.G(x[:, :4] + 0.1 * z) - x).pow(2).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
        self.steps += 1
        return loss.item()

    def train(self, loader, epochs):
        for epoch in range(epochs):
            for (x,) in loader:
                self._step(x)
            print(f"epoch {epoch}: {self.steps} steps")
        with torch.no_grad():
            fixed = self.G(self.G.sample_latent(4))
        print("samples", tuple(fixed.shape))
