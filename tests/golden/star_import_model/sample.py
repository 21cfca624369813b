import torch

from model import *


def sample(decoder, start=0, length=20):
    hidden = decoder.init_hidden(1)
    inp = torch.tensor([start])
    out = [start]
    with torch.no_grad():
        for _ in range(length):
            logits, hidden = decoder(inp, hidden)
            inp = logits.argmax(dim=1)
            out.append(inp.item())
    return out
