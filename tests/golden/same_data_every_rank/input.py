"""Teach a tiny RNN to spell one word, one character at a time: the whole training set is one sequence."""
import torch
import torch.nn as nn

torch.manual_seed(0)
chars = ["h", "e", "l", "o"]
x_ids = [0, 1, 2, 2]  # hell
y_ids = [1, 2, 2, 3]  # ello

inputs = torch.eye(len(chars))[x_ids]  # one-hot, one row per step
labels = torch.tensor(y_ids)


class CharRNN(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.cell = nn.RNNCell(n, n)

    def forward(self, hidden, x):
        return self.cell(x.unsqueeze(0), hidden)


model = CharRNN(len(chars))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)

for epoch in range(20):
    optimizer.zero_grad()
    loss = 0
    hidden = torch.zeros(1, len(chars))
    for x, label in zip(inputs, labels):  # the hidden state runs along the sequence
        hidden = model(hidden, x)
        loss = loss + criterion(hidden, label.unsqueeze(0))
    loss.backward()
    optimizer.step()
    print(f"epoch {epoch + 1} loss {loss.item():.3f}")
