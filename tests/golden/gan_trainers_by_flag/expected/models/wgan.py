"""WGAN with weight clipping: five critic steps per generator step."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


class WGAN(object):
    def __init__(self, args):
        self.G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 4))
        self.D = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.check_cuda(args.cuda)
        if dist.is_initialized():
            self.D = DDP(self.D, device_ids=[torch.cuda.current_device()] if next(self.D.parameters()).is_cuda else None)
        if dist.is_initialized():
            self.G = DDP(self.G, device_ids=[torch.cuda.current_device()] if next(self.G.parameters()).is_cuda else None)
        self.d_optimizer = torch.optim.RMSprop(self.D.parameters(), lr=5e-4)
        self.g_optimizer = torch.optim.RMSprop(self.G.parameters(), lr=5e-4)
        self.generator_iters = args.generator_iters
        self.critic_iter = 5
        self.weight_cliping_limit = 0.01

    def check_cuda(self, cuda_flag=False):
        self.cuda = cuda_flag
        if cuda_flag:
            self.D.cuda()
            self.G.cuda()

    def get_infinite_batches(self, data_loader):
        epoch = 0
        while True:
            if isinstance(getattr(data_loader, "sampler", None), DistributedSampler):
                data_loader.sampler.set_epoch(epoch)
            for (images,) in data_loader:
                yield images
            epoch += 1

    def train(self, train_loader):
        self.file = open("losses.txt", "w") if not dist.is_initialized() or dist.get_rank() == 0 else open(os.devnull, "w")
        self.data = self.get_infinite_batches(train_loader)
        for g_iter in range(self.generator_iters):
            for d_iter in range(self.critic_iter):
                self.D.zero_grad()
                for p in self.D.parameters():
                    p.data.clamp_(-self.weight_cliping_limit, self.weight_cliping_limit)
                images = self.data.__next__()
                z = torch.randn(images.size(0), 2)
                d_loss = self.D(self.G(z).detach()).mean() - self.D(images).mean()
                d_loss.backward()
                self.d_optimizer.step()
            self.G.zero_grad()
            g_loss = -self.D(self.G(torch.randn(8, 2))).mean()
            g_loss.backward()
            self.g_optimizer.step()
            self.file.write(f"{g_iter} {d_loss.item():.4f} {g_loss.item():.4f}\n")
        self.file.close()
        self.save_model()

    def save_model(self):
        os.makedirs("weights", exist_ok=True)
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(getattr(self.G, "module", self.G).state_dict(), "weights/wgan_generator.pkl")
            torch.save(getattr(self.D, "module", self.D).state_dict(), "weights/wgan_discriminator.pkl")
