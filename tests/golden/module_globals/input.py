"""Model, data and optimizer are globals; train() and evaluate() read them; __main__ runs the epochs."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(3)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
train_set = TensorDataset(torch.randn(120, 4), torch.randint(0, 3, (120,)))
test_set = TensorDataset(torch.randn(30, 4), torch.randint(0, 3, (30,)))
train_loader = DataLoader(train_set, batch_size=10, shuffle=True)
test_loader = DataLoader(test_set, batch_size=10)

model = nn.Linear(4, 3).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def train(epoch):
    model.train()
    for data, target in train_loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
    print(f"train epoch {epoch}: loss {loss.item():.4f}")


def evaluate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            correct += (model(data).argmax(dim=1) == target).sum().item()
    print(f"test accuracy {correct}/{len(test_set)}")


if __name__ == "__main__":
    for epoch in range(1, 3):
        train(epoch)
        evaluate()
