"""The GAN of the training script beside it: a Solver that owns both networks and their optimizers,
can resume the generator from a checkpoint, draws batches with next() for a fixed number of
iterations, logs losses, and saves sample images and checkpoints."""
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from weights import load_weights


class Generator(nn.Module):
    def __init__(self, z_dim, image_size):
        super().__init__()
        self.image_size = image_size
        self.main = nn.Sequential(
            nn.Linear(z_dim, 64), nn.ReLU(), nn.Linear(64, image_size * image_size), nn.Tanh()
        )

    def forward(self, z):
        return self.main(z).view(-1, self.image_size, self.image_size)


class Discriminator(nn.Module):
    def __init__(self, image_size):
        super().__init__()
        self.main = nn.Sequential(
            nn.Flatten(), nn.Linear(image_size * image_size, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
        )

    def forward(self, x):
        return self.main(x)


def save_pgm(images, path):
    """Writes images in [-1, 1] (N x H x W) side by side as one 8-bit grey PGM file."""
    grid = torch.cat(list(images), dim=1)
    pixels = ((grid.clamp(-1, 1) + 1) * 127.5).round().to(torch.uint8)
    with open(path, "wb") as f:
        f.write(f"P5 {pixels.size(1)} {pixels.size(0)} 255\n".encode())
        f.write(pixels.numpy().tobytes())


class Solver:
    def __init__(self, data_loader, config):
        self.data_loader = data_loader
        self.z_dim = config.z_dim
        self.num_iters = config.num_iters
        self.log_step = config.log_step
        self.sample_step = config.sample_step
        self.sample_dir = config.sample_dir
        self.model_save_dir = config.model_save_dir
        self.resume_G = config.resume_G
        self.build_model(config.image_size, config.lr)
        self.fixed_z = torch.randn(8, self.z_dim)

    def build_model(self, image_size, lr):
        self.G = Generator(self.z_dim, image_size)
        self.D = Discriminator(image_size)
        self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr, betas=(0.5, 0.999))
        self.d_optimizer = torch.optim.Adam(self.D.parameters(), lr, betas=(0.5, 0.999))

    def reset_grad(self):
        self.g_optimizer.zero_grad()
        self.d_optimizer.zero_grad()

    def restore_model(self, path):
        load_weights(self.G, path)

    def train(self):
        if self.resume_G:
            self.restore_model(self.resume_G)
        os.makedirs(self.sample_dir, exist_ok=True)
        os.makedirs(self.model_save_dir, exist_ok=True)
        data_iter = iter(self.data_loader)
        for i in range(self.num_iters):
            try:
                (real,) = next(data_iter)
            except StopIteration:
                data_iter = iter(self.data_loader)
                (real,) = next(data_iter)

            # train the discriminator on real images and on the generator's, detached
            z = torch.randn(real.size(0), self.z_dim)
            out_real = self.D(real)
            out_fake = self.D(self.G(z).detach())
            d_loss = F.binary_cross_entropy_with_logits(
                out_real, torch.ones_like(out_real)
            ) + F.binary_cross_entropy_with_logits(out_fake, torch.zeros_like(out_fake))
            self.reset_grad()
            d_loss.backward()
            self.d_optimizer.step()

            # train the generator to fool it
            out_fake = self.D(self.G(z))
            g_loss = F.binary_cross_entropy_with_logits(out_fake, torch.ones_like(out_fake))
            self.reset_grad()
            g_loss.backward()
            self.g_optimizer.step()

            if (i + 1) % self.log_step == 0:
                print(f"iter [{i + 1}/{self.num_iters}] d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}")
            if (i + 1) % self.sample_step == 0:
                with torch.no_grad():
                    samples = self.G(self.fixed_z)
                save_pgm(samples, os.path.join(self.sample_dir, f"{i + 1}-images.pgm"))
                torch.save(self.G.state_dict(), os.path.join(self.model_save_dir, f"{i + 1}-G.ckpt"))
                torch.save(self.D.state_dict(), os.path.join(self.model_save_dir, f"{i + 1}-D.ckpt"))
