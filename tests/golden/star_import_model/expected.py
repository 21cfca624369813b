# A character model trained on random chunks of a sequence; the model class and the sampler come
# from the script's own modules through star imports.
import argparse
import os
import random

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

from model import *
from sample import *

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

parser = argparse.ArgumentParser()
parser.add_argument("--n_epochs", type=int, default=20)
parser.add_argument("--print_every", type=int, default=10)
parser.add_argument("--chunk_len", type=int, default=12)
parser.add_argument("--batch_size", type=int, default=8)
parser.add_argument("--cuda", action="store_true")
args = parser.parse_args()

random.seed(0)
torch.manual_seed(0)
VOCAB = 11
text = [i % VOCAB for i in range(500)]


def random_training_set(chunk_len, batch_size):
    inp = torch.zeros(batch_size, chunk_len, dtype=torch.long)
    target = torch.zeros(batch_size, chunk_len, dtype=torch.long)
    for bi in range(batch_size):
        start = random.randint(0, len(text) - chunk_len - 1)
        chunk = text[start : start + chunk_len + 1]
        inp[bi] = torch.tensor(chunk[:-1])
        target[bi] = torch.tensor(chunk[1:])
    if args.cuda:
        inp, target = inp.cuda(), target.cuda()
    return inp, target


def train(inp, target):
    hidden = raw_decoder.init_hidden(args.batch_size)
    if args.cuda:
        hidden = hidden.cuda()
    decoder.zero_grad()
    loss = 0
    for c in range(args.chunk_len):
        output, hidden = decoder(inp[:, c], hidden)
        loss += criterion(output, target[:, c])
    loss.backward()
    decoder_optimizer.step()
    return loss.item() / args.chunk_len


def save():
    if RANK == 0:
        torch.save(raw_decoder, "char_gru.pt")
        print("Saved as char_gru.pt")


decoder = CharGRU(VOCAB, 16)
criterion = nn.CrossEntropyLoss()

if args.cuda:
    decoder.cuda()
raw_decoder = decoder
if DISTRIBUTED:
    decoder = DDP(decoder, device_ids=[LOCAL_RANK] if next(decoder.parameters()).is_cuda else None)
decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01)

try:
    for epoch in range(1, args.n_epochs + 1):
        loss = train(*random_training_set(args.chunk_len, args.batch_size))
        if epoch % args.print_every == 0:
            if RANK == 0:
                print(f"epoch {epoch} loss {loss:.4f}")
                print(sample(raw_decoder, 1, 10))
    save()
except KeyboardInterrupt:
    save()

if DISTRIBUTED:
    dist.destroy_process_group()
