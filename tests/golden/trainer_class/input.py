"""A Trainer class that owns the model, the optimizer and the loader."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, epochs: int = 2):
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        torch.manual_seed(0)
        data = TensorDataset(torch.randn(200, 10), torch.randn(200, 1))
        self.train_loader = DataLoader(data, batch_size=20, shuffle=True)
        self.model = nn.Linear(10, 1).to(self.device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.05)
        self.epochs = epochs

    def train_epoch(self, epoch: int) -> float:
        self.model.train()
        last = 0.0
        for xb, yb in self.train_loader:
            xb, yb = xb.to(self.device), yb.to(self.device)
            self.optimizer.zero_grad()
            loss = nn.functional.mse_loss(self.model(xb), yb)
            loss.backward()
            self.optimizer.step()
            last = loss.item()
        return last

    def fit(self):
        for epoch in range(self.epochs):
            loss = self.train_epoch(epoch)
            print(f"[epoch {epoch}] loss={loss:.4f}")
            # keep the latest weights
            torch.save(self.model.state_dict(), "trainer_ckpt.pt")


def main():
    Trainer().fit()


if __name__ == "__main__":
    main()
