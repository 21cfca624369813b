"""A tiny GAN: two models, two optimizers, one loop."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

LATENT = 4


def make_generator():
    return nn.Sequential(nn.Linear(LATENT, 16), nn.ReLU(), nn.Linear(16, 2))


def make_discriminator():
    return nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))


def main():
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    real = torch.randn(256, 2) * 0.5 + 1.0
    dataloader = DataLoader(TensorDataset(real), batch_size=32, shuffle=True)

    netG = make_generator().to(device)
    netD = make_discriminator().to(device)
    optG = torch.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    for epoch in range(2):
        for (batch,) in dataloader:
            batch = batch.to(device)
            noise = torch.randn(batch.size(0), LATENT, device=device)
            fake = netG(noise)

            optD.zero_grad()
            d_real = criterion(netD(batch), torch.ones(batch.size(0), 1, device=device))
            d_fake = criterion(netD(fake.detach()), torch.zeros(batch.size(0), 1, device=device))
            (d_real + d_fake).backward()
            optD.step()

            optG.zero_grad()
            g_loss = criterion(netD(fake), torch.ones(batch.size(0), 1, device=device))
            g_loss.backward()
            optG.step()
        print(f"epoch {epoch}: D {(d_real + d_fake).item():.3f} G {g_loss.item():.3f}")

    torch.save({"G": netG.state_dict(), "D": netD.state_dict()}, "gan.pt")


if __name__ == "__main__":
    main()
