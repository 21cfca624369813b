"""A trigram language model trained one sample at a time from a list of (context, target) pairs."""
import torch
import torch.nn as nn

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
    torch.manual_seed(0)
    model = NGram(len(vocab))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(3):
        for context, target in trigrams:
            x = torch.tensor([index[w] for w in context])
            y = torch.tensor([index[target]])
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
