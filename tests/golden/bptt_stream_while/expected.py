"""A language model over one token stream, cut by get_batch() into windows of a random length.

The stream is batchified once; each step takes the next window, whose length is drawn around bptt
(seeded), and the hidden state carries over from window to window.
"""
import os

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

bptt = 6
batch_size = 4
ntokens = 40


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i, seq_len=None):
    seq_len = min(seq_len if seq_len else bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


class RNNModel(nn.Module):
    def __init__(self, ntoken, nhid):
        super().__init__()
        self.nhid = nhid
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.GRU(nhid, nhid)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, x, hidden):
        output, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(output), hidden

    def init_hidden(self, bsz):
        return torch.zeros(1, bsz, self.nhid)


np.random.seed(1)
torch.manual_seed(1)
stream = torch.randint(0, ntokens, (1200,))
train_data = batchify(stream, batch_size)
if DISTRIBUTED:  # each rank its own stretch of the stream, all as long: the ranks take the same steps
    stretch = len(train_data) // WORLD_SIZE
    train_data = train_data[RANK * stretch : (RANK + 1) * stretch]

model = RNNModel(ntokens, 16)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(2):
    model.train()
    hidden = raw_model.init_hidden(batch_size)
    total_loss, steps, i = 0.0, 0, 0
    while i < train_data.size(0) - 1 - 1:
        seq_len = max(2, int(np.random.normal(bptt, 2)))
        data, targets = get_batch(train_data, i, seq_len=seq_len)
        hidden = hidden.detach()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
        steps += 1
        i += seq_len
    if RANK == 0:
        print(f"epoch {epoch}: {steps} steps, mean loss {total_loss / steps:.4f}")

if DISTRIBUTED:
    dist.destroy_process_group()
