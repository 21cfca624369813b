"""A module-level tutorial script: a tiny classifier on synthetic points, with an optional plot
whose library may be missing (one-line try/except, as tutorials write it)."""
import torch
import torch.nn as nn
import torch.utils.data as Data

EPOCHS = 2
BATCH_SIZE = 16

torch.manual_seed(1)
points = torch.randn(128, 2)
labels = (points[:, 0] * points[:, 1] > 0).long()
loader = Data.DataLoader(Data.TensorDataset(points, labels), batch_size=BATCH_SIZE, shuffle=True)
print(points.size(), labels.size())

net = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.Adam(net.parameters(), lr=0.01)
loss_func = nn.CrossEntropyLoss()

try: from fancy_plots_not_installed import scatter; HAS_PLOTS = True
except ImportError: HAS_PLOTS = False; print('Install fancy_plots for the scatter plot')

for epoch in range(EPOCHS):
    for step, (b_x, b_y) in enumerate(loader):
        loss = loss_func(net(b_x), b_y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 4 == 0:
            print('Epoch:', epoch, '| step:', step, '| loss: %.4f' % loss.item())
            if HAS_PLOTS:
                scatter(points, net(points).argmax(1))

with torch.no_grad():
    accuracy = (net(points).argmax(1) == labels).float().mean().item()
print('accuracy: %.2f' % accuracy)
