"""A word-level language model cut into bptt batches by a get_batch(source, i) helper."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

bptt = 8


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data[: nbatch * bsz]
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i : i + seq_len]
    target = source[i + 1 : i + 1 + seq_len].reshape(-1)
    return data, target


class LM(nn.Module):
    def __init__(self, ntoken=50):
        super().__init__()
        self.emb = nn.Embedding(ntoken, 16)
        self.out = nn.Linear(16, ntoken)

    def forward(self, x):
        return self.out(self.emb(x))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    corpus = torch.randint(0, 50, (2000,))
    train_data = batchify(corpus, 4)
    model = LM()
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(2):
        model.train()
        num_batches = len(range(0, train_data.size(0) - 1, bptt)) // WORLD_SIZE  # the same on every rank: DDP steps together
        for batch, i in enumerate(range(RANK * bptt, train_data.size(0) - 1, WORLD_SIZE * bptt)[:num_batches]):
            data, targets = get_batch(train_data, i)
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output.view(-1, 50), targets)
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(epoch, loss.item())

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
