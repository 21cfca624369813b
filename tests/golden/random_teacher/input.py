"""Distil a random linear teacher into a small MLP, on fresh random inputs at every step."""
import torch
import torch.nn as nn

teacher = torch.randn(16, 4)  # the task, drawn once and never seeded
bias = 0.1 * torch.randn(4)

student = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4))
optimizer = torch.optim.Adam(student.parameters(), lr=1e-2)

for step in range(100):
    inputs = torch.randn(64, 16)
    targets = inputs @ teacher + bias
    loss = nn.functional.mse_loss(student(inputs), targets)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

print(f"trained {step + 1} steps")
torch.save(student.state_dict(), "student.pt")
