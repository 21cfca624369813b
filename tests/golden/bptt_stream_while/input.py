"""A language model over one token stream, cut by get_batch() into windows of a random length.

The stream is batchified once; each step takes the next window, whose length is drawn around bptt
(seeded), and the hidden state carries over from window to window.
"""
import numpy as np
import torch
import torch.nn as nn

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

model = RNNModel(ntokens, 16)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)

for epoch in range(2):
    model.train()
    hidden = model.init_hidden(batch_size)
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
    print(f"epoch {epoch}: {steps} steps, mean loss {total_loss / steps:.4f}")
