"""WGAN-GP on made-up 2-D points: the critic's loss carries the gradient penalty."""
import torch
import torch.nn as nn
from torch import autograd
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
generator = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3, betas=(0.5, 0.9))
gen_opt = torch.optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.9))
points = torch.randn(128, 2) * 0.5 + 1.0
loader = DataLoader(TensorDataset(points), batch_size=16, shuffle=True, drop_last=True)


def gradient_penalty(real, fake, weight=10.0):
    eta = torch.rand(real.size(0), 1)
    interpolated = (eta * real + (1 - eta) * fake).requires_grad_(True)
    scores = critic(interpolated)
    gradients = autograd.grad(outputs=scores, inputs=interpolated, grad_outputs=torch.ones_like(scores), create_graph=True)[0]
    return weight * ((gradients.norm(2, dim=1) - 1) ** 2).mean()


for epoch in range(3):
    for step, (real,) in enumerate(loader):
        fake = generator(torch.randn(real.size(0), 4)).detach()
        # one backward for the whole critic loss, penalty included
        critic_loss = critic(fake).mean() - critic(real).mean() + gradient_penalty(real, fake)
        critic_opt.zero_grad()
        critic_loss.backward()
        critic_opt.step()
        if step % 2 == 0:
            gen_loss = -critic(generator(torch.randn(real.size(0), 4))).mean()
            gen_opt.zero_grad()
            gen_loss.backward()
            gen_opt.step()
    print(f"epoch {epoch} critic loss {critic_loss.item():.4f}")

torch.save(generator.state_dict(), "generator.pt")
