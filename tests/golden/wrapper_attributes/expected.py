"""Character-level language model trained at module level and sampled from a helper."""
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from charmodel import CharRNN

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
text = torch.randint(0, 12, (64, 9))
dataset = TensorDataset(text[:, :-1], text[:, 1:])
sampler = DistributedSampler(dataset) if DISTRIBUTED else None
loader = DataLoader(dataset, batch_size=16, shuffle=(sampler is None), sampler=sampler)

model = CharRNN(vocab_size=12, hidden_size=16)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def sample(length=8):
    model.eval()
    tokens = raw_model.generate(start=0, length=length)
    model.train()
    return "".join("abcdefghijkl"[t] for t in tokens)


for epoch in range(2):
    if sampler is not None:
        sampler.set_epoch(epoch)
    for x, y in loader:
        hidden = raw_model.init_hidden(x.size(0))  # the model's own method, not the wrapper's
        logits, _ = model(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, raw_model.vocab_size), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    if RANK == 0:
        print(f"epoch {epoch} loss {loss.item():.3f}")
if RANK == 0:
    print(f"hidden size {raw_model.hidden_size}, sample {sample()}")

if DISTRIBUTED:
    dist.destroy_process_group()
