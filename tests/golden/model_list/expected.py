# Two networks, with and without batch normalisation, trained side by side on the same batches.
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import torch.utils.data as Data
from torch import nn
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(1)
N_HIDDEN = 3
x = torch.linspace(-3, 3, 256).unsqueeze(1)
y = x.pow(2) + 0.1 * torch.randn(x.size())
test_x = torch.linspace(-3, 3, 32).unsqueeze(1)
test_y = test_x.pow(2)
train_dataset = Data.TensorDataset(x, y)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = Data.DataLoader(dataset=train_dataset, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)


class Net(nn.Module):
    def __init__(self, batch_normalization=False):
        super().__init__()
        self.do_bn = batch_normalization
        self.bn_input = nn.BatchNorm1d(1)
        layers = []
        for i in range(N_HIDDEN):
            layers.append(nn.Linear(1 if i == 0 else 10, 10))
            if batch_normalization:
                layers.append(nn.BatchNorm1d(10))
            layers.append(nn.Tanh())
        self.hidden = nn.Sequential(*layers)
        self.predict = nn.Linear(10, 1)

    def forward(self, x):
        if self.do_bn:
            x = self.bn_input(x)
        return self.predict(self.hidden(x))


nets = [Net(batch_normalization=False), Net(batch_normalization=True)]
if DISTRIBUTED:
    nets = [DDP(net, device_ids=[LOCAL_RANK] if next(net.parameters()).is_cuda else None, find_unused_parameters=True) for net in nets]
opts = [torch.optim.Adam(net.parameters(), lr=0.02) for net in nets]
loss_func = nn.MSELoss()

if __name__ == "__main__":
    losses = [[], []]
    for epoch in range(3):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        for net, history in zip(nets, losses):
            net.eval()
            with torch.no_grad():
                history.append(loss_func(net(test_x), test_y).item())
            net.train()
        for step, (b_x, b_y) in enumerate(train_loader):
            for net, opt in zip(nets, opts):
                loss = loss_func(net(b_x), b_y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        if RANK == 0:
            print(f"epoch {epoch}: test loss {losses[0][-1]:.3f} without BN, {losses[1][-1]:.3f} with BN")

if DISTRIBUTED:
    dist.destroy_process_group()
