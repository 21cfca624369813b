"""Fit a curve with a small MLP, taking every point at every step (full-batch gradient descent)."""
import torch
import torch.nn as nn

torch.manual_seed(1)
x = torch.unsqueeze(torch.linspace(-1, 1, 200), dim=1)
y = x.pow(2) + 0.2 * torch.rand(x.size())

net = nn.Sequential(nn.Linear(1, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
loss_func = nn.MSELoss()

for t in range(100):
    prediction = net(x)
    loss = loss_func(prediction, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"last step's loss {loss.item():.4f}")
