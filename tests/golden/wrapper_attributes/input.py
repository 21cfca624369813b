"""Character-level language model trained at module level and sampled from a helper."""
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from charmodel import CharRNN

torch.manual_seed(0)
text = torch.randint(0, 12, (64, 9))
loader = DataLoader(TensorDataset(text[:, :-1], text[:, 1:]), batch_size=16, shuffle=True)

model = CharRNN(vocab_size=12, hidden_size=16)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)


def sample(length=8):
    model.eval()
    tokens = model.generate(start=0, length=length)
    model.train()
    return "".join("abcdefghijkl"[t] for t in tokens)


for epoch in range(2):
    for x, y in loader:
        hidden = model.init_hidden(x.size(0))  # the model's own method, not the wrapper's
        logits, _ = model(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, model.vocab_size), y.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} loss {loss.item():.3f}")
print(f"hidden size {model.hidden_size}, sample {sample()}")
