"""A denoising model trained through a module that holds it and computes the loss (diffusion style)."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(17, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x, t):
        return self.net(torch.cat([x, t[:, None].float() / 10], 1))


class DiffusionTrainer(nn.Module):
    """Noises a clean batch at random steps and returns the denoiser's loss."""

    def __init__(self, model, steps=10):
        super().__init__()
        self.model = model
        self.steps = steps
        self.register_buffer("alphas", torch.linspace(0.99, 0.5, steps))

    def forward(self, x0):
        t = torch.randint(self.steps, (x0.shape[0],), device=x0.device)
        noise = torch.randn_like(x0)
        a = self.alphas[t][:, None]
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        return F.mse_loss(self.model(xt, t), noise)


def ema(source, target, decay):
    src, tgt = source.state_dict(), target.state_dict()
    for key in src:
        tgt[key].copy_(tgt[key] * decay + src[key] * (1 - decay))


torch.manual_seed(0)
data = TensorDataset(torch.randn(256, 16))
loader = DataLoader(data, batch_size=16, shuffle=True, drop_last=True)
model = Denoiser()
ema_model = copy.deepcopy(model)  # the averaged weights we sample from
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
trainer = DiffusionTrainer(model).to(device)

for epoch in range(2):
    for (x0,) in loader:
        loss = trainer(x0.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema(model, ema_model, 0.99)
    print(f"epoch {epoch} loss {loss.item():.4f}")

torch.save({"model": model.state_dict(), "ema": ema_model.state_dict()}, "ckpt.pt")
