# A variational autoencoder that decodes a few latent samples now and then during training, and
# checks a traced copy of itself at the end.
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class VAE(nn.Module):
    def __init__(self, in_dim=16, latent=2):
        super().__init__()
        self.latent = latent
        self.encoder = nn.Linear(in_dim, 2 * latent)
        self.decoder = nn.Sequential(nn.Linear(latent, in_dim), nn.Sigmoid())

    def forward(self, x):
        mean, log_var = self.encoder(x).chunk(2, dim=1)
        z = mean + torch.randn_like(mean) * torch.exp(0.5 * log_var)
        return self.decoder(z), mean, log_var

    def inference(self, z):
        return self.decoder(z)


def main(args):
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.rand(192, 16)
    data_loader = DataLoader(TensorDataset(data), batch_size=args.batch_size, shuffle=True)

    vae = VAE().to(device)
    optimizer = torch.optim.Adam(vae.parameters(), lr=1e-2)

    for epoch in range(args.epochs):
        for iteration, (x,) in enumerate(data_loader):
            x = x.to(device)
            recon, mean, log_var = vae(x)
            bce = nn.functional.binary_cross_entropy(recon, x, reduction="mean")
            kld = -0.5 * torch.mean(1 + log_var - mean.pow(2) - log_var.exp())
            loss = bce + kld
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            if iteration % args.print_every == 0:
                print(f"epoch {epoch} batch {iteration} loss {loss.item():.4f}")
                z = torch.randn(4, vae.latent, device=device)
                samples = vae.inference(z)
                print(f"samples in [{samples.min().item():.2f}, {samples.max().item():.2f}]")

    example = torch.rand(2, 16, device=device)
    vae.eval()
    traced = torch.jit.trace(vae, example, check_trace=False)
    print("traced:", type(traced).__name__)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--print_every", type=int, default=5)
    main(parser.parse_args())
