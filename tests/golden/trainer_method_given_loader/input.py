# A small trainer object of the script: it builds its model and optimizer, and is handed the loader.
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, lr):
        self.model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)
        self.loss_fn = nn.CrossEntropyLoss()

    def fit(self, loader, epochs):
        for epoch in range(epochs):
            for x, y in loader:
                loss = self.loss_fn(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()


torch.manual_seed(0)
features = torch.randn(96, 6)
labels = features[:, :3].argmax(dim=1)
train_loader = DataLoader(TensorDataset(features, labels), batch_size=12, shuffle=True)

trainer = Trainer(lr=0.1)
trainer.fit(train_loader, epochs=3)
with torch.no_grad():
    accuracy = (trainer.model(features).argmax(dim=1) == labels).float().mean().item()
print(f"accuracy {accuracy:.4f}")
