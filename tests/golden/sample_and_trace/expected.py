# A variational autoencoder that decodes a few latent samples now and then during training, and
# checks a traced copy of itself at the end.
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


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
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = torch.rand(192, 16)
    dataset = TensorDataset(data)
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    data_loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=(sampler is None), sampler=sampler)

    vae = VAE().to(device)
    raw_vae = vae
    if DISTRIBUTED:
        vae = DDP(vae, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
    optimizer = torch.optim.Adam(vae.parameters(), lr=1e-2)

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
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
                if RANK == 0:
                    print(f"epoch {epoch} batch {iteration} loss {loss.item():.4f}")
                z = torch.randn(4, raw_vae.latent, device=device)
                samples = raw_vae.inference(z)
                if RANK == 0:
                    print(f"samples in [{samples.min().item():.2f}, {samples.max().item():.2f}]")

    example = torch.rand(2, 16, device=device)
    vae.eval()
    traced = torch.jit.trace(raw_vae, example, check_trace=False)
    if RANK == 0:
        print("traced:", type(traced).__name__)

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--print_every", type=int, default=5)
    main(parser.parse_args())
