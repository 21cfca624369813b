import torch
import torch.nn as nn


class CharGRU(nn.Module):
    def __init__(self, vocab, hidden_size, n_layers=1):
        super().__init__()
        self.hidden_size = hidden_size
        self.n_layers = n_layers
        self.encoder = nn.Embedding(vocab, hidden_size)
        self.rnn = nn.GRU(hidden_size, hidden_size, n_layers)
        self.decoder = nn.Linear(hidden_size, vocab)

    def forward(self, inp, hidden):
        batch_size = inp.size(0)
        out, hidden = self.rnn(self.encoder(inp).view(1, batch_size, -1), hidden)
        return self.decoder(out.view(batch_size, -1)), hidden

    def init_hidden(self, batch_size):
        return torch.zeros(self.n_layers, batch_size, self.hidden_size)
