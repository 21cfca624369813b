"""A character-level GRU language model (the script's own module)."""
import torch
import torch.nn as nn


class CharRNN(nn.Module):
    def __init__(self, vocab_size, hidden_size):
        super().__init__()
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.embed = nn.Embedding(vocab_size, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.head = nn.Linear(hidden_size, vocab_size)

    def init_hidden(self, batch_size):
        return torch.zeros(1, batch_size, self.hidden_size)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.embed(x), hidden)
        return self.head(out), hidden

    @torch.no_grad()
    def generate(self, start, length):
        hidden = self.init_hidden(1)
        token = torch.tensor([[start]])
        tokens = [start]
        for _ in range(length):
            logits, hidden = self(token, hidden)
            token = logits[:, -1].argmax(-1, keepdim=True)
            tokens.append(token.item())
        return tokens
