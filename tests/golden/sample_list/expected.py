"""A trigram language model trained one sample at a time from a list of (context, target) pairs."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

text = "the quick brown fox jumps over the lazy dog and the dog sleeps while the fox runs".split()
vocab = sorted(set(text))
index = {w: i for i, w in enumerate(vocab)}
trigrams = [((text[i], text[i + 1]), text[i + 2]) for i in range(len(text) - 2)]


class NGram(nn.Module):
    def __init__(self, n_words, dim=8):
        super().__init__()
        self.emb = nn.Embedding(n_words, dim)
        self.out = nn.Linear(2 * dim, n_words)

    def forward(self, context):
        return self.out(self.emb(context).view(1, -1))


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    torch.manual_seed(0)
    model = NGram(len(vocab))
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for context, target in trigrams[RANK::WORLD_SIZE][: len(trigrams) // WORLD_SIZE]:
            x = torch.tensor([index[w] for w in context])
            y = torch.tensor([index[target]])
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if RANK == 0:
            print(f"epoch {epoch} last loss {loss.item():.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
