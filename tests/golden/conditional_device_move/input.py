# A module-level classifier that moves the model to the GPU only when there is one.
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

batch_size = 32
learning_rate = 1e-2
num_epochs = 3

torch.manual_seed(0)
train_x = torch.randn(256, 20)
train_y = (train_x[:, :4].sum(dim=1) > 0).long()
test_x = torch.randn(64, 20)
test_y = (test_x[:, :4].sum(dim=1) > 0).long()
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=batch_size, shuffle=True)
test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=batch_size, shuffle=False)


class Classifier(nn.Module):
    def __init__(self, in_dim, n_class):
        super().__init__()
        self.linear = nn.Linear(in_dim, n_class)

    def forward(self, x):
        return self.linear(x)


model = Classifier(20, 2)
use_gpu = torch.cuda.is_available()
if use_gpu:
    model = model.cuda()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)

for epoch in range(num_epochs):
    model.train()
    running_loss = 0.0
    for i, (features, label) in enumerate(train_loader, 1):
        if use_gpu:
            features, label = features.cuda(), label.cuda()
        out = model(features)
        loss = criterion(out, label)
        running_loss += loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    correct = 0
    for features, label in test_loader:
        if use_gpu:
            features, label = features.cuda(), label.cuda()
        with torch.no_grad():
            correct += (model(features).argmax(1) == label).sum().item()
    print(f"epoch {epoch + 1} loss {running_loss / i:.4f} acc {correct / len(test_x):.3f}")

torch.save(model.state_dict(), "./classifier.pth")
