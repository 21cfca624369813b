"""Trains a small generator through a Trainer class of trainer.py, which draws latents with the
generator's own sample_latent() method."""
import torch
from torch.utils.data import DataLoader, TensorDataset

from models import Generator
from trainer import Trainer

torch.manual_seed(0)
data = TensorDataset(torch.randn(64, 8))
loader = DataLoader(data, batch_size=8, shuffle=True)

generator = Generator(latent_dim=4, out_dim=8)
optimizer = torch.optim.Adam(generator.parameters(), lr=1e-3)
trainer = Trainer(generator, optimizer)
trainer.train(loader, epochs=2)
torch.save(generator.state_dict(), "generator.pt")
