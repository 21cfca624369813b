"""WGAN with weight clipping: five critic steps per generator step."""
import os

import torch
import torch.nn as nn


class WGAN(object):
    def __init__(self, args):
        self.G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 4))
        self.D = nn.Sequential(nn.Linear(4, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
        self.check_cuda(args.cuda)
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
        while True:
            for (images,) in data_loader:
                yield images

    def train(self, train_loader):
        self.file = open("losses.txt", "w")
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
        torch.save(self.G.state_dict(), "weights/wgan_generator.pkl")
        torch.save(self.D.state_dict(), "weights/wgan_discriminator.pkl")
