"""A small trainer: it owns the device, the optimizer and the checkpoint."""

import torch
import torch.nn as nn


class Trainer:
    def __init__(self, model, loader, lr, ckpt):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device)
        self.loader = loader
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr, momentum=0.9)
        self.criterion = nn.CrossEntropyLoss()
        self.ckpt = ckpt

    def fit(self, epochs):
        for epoch in range(epochs):
            self.model.train()
            total = 0.0
            for x, y in self.loader:
                x, y = x.to(self.device), y.to(self.device)
                loss = self.criterion(self.model(x), y)
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                total += loss.item()
            # the head's width is the model's own attribute
            print(f"epoch {epoch}: loss {total / len(self.loader):.4f} over {self.model.num_classes} classes")
            torch.save(self.model.state_dict(), self.ckpt)
