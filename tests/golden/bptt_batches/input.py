"""A word-level language model cut into bptt batches by a get_batch(source, i) helper."""
import torch
import torch.nn as nn

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
    torch.manual_seed(0)
    corpus = torch.randint(0, 50, (2000,))
    train_data = batchify(corpus, 4)
    model = LM()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    criterion = nn.CrossEntropyLoss()
    for epoch in range(2):
        model.train()
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            data, targets = get_batch(train_data, i)
            optimizer.zero_grad()
            output = model(data)
            loss = criterion(output.view(-1, 50), targets)
            loss.backward()
            optimizer.step()
        print(epoch, loss.item())


if __name__ == "__main__":
    main()
