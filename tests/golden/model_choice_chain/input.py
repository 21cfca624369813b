# A small GAN whose generator and critic are picked by flags, initialised, then moved to the GPU.
import argparse
import random

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class MlpG(nn.Module):
    def __init__(self, nz, width):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, z):
        return self.main(z)


class DeepG(nn.Module):
    def __init__(self, nz, width):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(nz, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, 2))

    def forward(self, z):
        return self.main(z)


class Critic(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(2, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x):
        return self.main(x).mean()


def weights_init(m):
    if isinstance(m, nn.Linear):
        m.weight.data.normal_(0.0, 0.2)
        m.bias.data.fill_(0)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="deep", help="mlp | deep | wide")
    parser.add_argument("--mlp_D", action="store_true")
    parser.add_argument("--nz", type=int, default=4)
    parser.add_argument("--niter", type=int, default=2)
    parser.add_argument("--netG", default="", help="generator checkpoint to continue from")
    parser.add_argument("--cuda", action="store_true")
    parser.add_argument("--adam", action="store_true")
    opt = parser.parse_args()

    opt.manualSeed = random.randint(1, 10000)
    random.seed(opt.manualSeed)
    torch.manual_seed(opt.manualSeed)

    data = torch.randn(128, 2) * 0.5 + 1.0
    dataloader = DataLoader(TensorDataset(data), batch_size=16, shuffle=True)

    if opt.arch == "mlp":
        netG = MlpG(opt.nz, 16)
    elif opt.arch == "wide":
        netG = MlpG(opt.nz, 64)
    else:
        netG = DeepG(opt.nz, 16)
    netG.apply(weights_init)
    if opt.netG != "":
        netG.load_state_dict(torch.load(opt.netG))
    print(netG)

    if opt.mlp_D:
        netD = Critic(8)
    else:
        netD = Critic(16)
        netD.apply(weights_init)

    if opt.cuda:
        netD.cuda()
        netG.cuda()

    if opt.adam:
        optimizerD = torch.optim.Adam(netD.parameters(), lr=1e-3)
        optimizerG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    else:
        optimizerD = torch.optim.RMSprop(netD.parameters(), lr=5e-3)
        optimizerG = torch.optim.RMSprop(netG.parameters(), lr=5e-3)

    for epoch in range(opt.niter):
        for i, (real,) in enumerate(dataloader):
            if opt.cuda:
                real = real.cuda()
            noise = torch.randn(real.size(0), opt.nz, device=real.device)
            optimizerD.zero_grad()
            errD = netD(netG(noise).detach()) - netD(real)
            errD.backward()
            optimizerD.step()
            for p in netD.parameters():
                p.data.clamp_(-0.1, 0.1)

            optimizerG.zero_grad()
            errG = -netD(netG(torch.randn(real.size(0), opt.nz, device=real.device)))
            errG.backward()
            optimizerG.step()
        print(f"[{epoch}/{opt.niter}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f}")

    torch.save(netG.state_dict(), "netG_final.pth")
    torch.save(netD.state_dict(), "netD_final.pth")
