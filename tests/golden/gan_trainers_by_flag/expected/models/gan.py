"""A plain GAN: the trainer owns both networks and their optimizers."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data.distributed import DistributedSampler


class GAN(object):
    def __init__(self, args):
        self.G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 4))
        self.D = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1), nn.Sigmoid())
        self.check_cuda(args.cuda)
        if dist.is_initialized():
            self.D = DDP(self.D, device_ids=[torch.cuda.current_device()] if next(self.D.parameters()).is_cuda else None)
        if dist.is_initialized():
            self.G = DDP(self.G, device_ids=[torch.cuda.current_device()] if next(self.G.parameters()).is_cuda else None)
        self.loss = nn.BCELoss()
        self.d_optimizer = torch.optim.Adam(self.D.parameters(), lr=1e-3)
        self.g_optimizer = torch.optim.Adam(self.G.parameters(), lr=1e-3)
        self.generator_iters = args.generator_iters
        self.batch_size = args.batch_size

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
            images = self.data.__next__()
            real_labels = torch.ones(images.size(0), 1)
            fake_labels = torch.zeros(images.size(0), 1)
            self.D.zero_grad()
            z = torch.randn(images.size(0), 2)
            d_loss = self.loss(self.D(images), real_labels) + self.loss(self.D(self.G(z).detach()), fake_labels)
            d_loss.backward()
            self.d_optimizer.step()
            self.G.zero_grad()
            g_loss = self.loss(self.D(self.G(torch.randn(images.size(0), 2))), real_labels)
            g_loss.backward()
            self.g_optimizer.step()
            self.file.write(f"{g_iter} {d_loss.item():.4f} {g_loss.item():.4f}\n")
        self.file.close()
        self.save_model()

    def save_model(self):
        os.makedirs("weights", exist_ok=True)
        if not dist.is_initialized() or dist.get_rank() == 0:
            torch.save(getattr(self.G, "module", self.G).state_dict(), "weights/gan_generator.pkl")
            torch.save(getattr(self.D, "module", self.D).state_dict(), "weights/gan_discriminator.pkl")
