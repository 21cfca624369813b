"""An early stopper class that pickles the whole model it is handed each time the loss improves."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class EarlyStopper(object):

    def __init__(self, num_trials, save_path):
        self.num_trials = num_trials
        self.trial_counter = 0
        self.best_loss = float("inf")
        self.save_path = save_path

    def is_continuable(self, model, loss):
        if loss < self.best_loss:
            self.best_loss = loss
            self.trial_counter = 0
            torch.save(model, self.save_path)
            return True
        elif self.trial_counter + 1 < self.num_trials:
            self.trial_counter += 1
            return True
        return False


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)
    loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    early_stopper = EarlyStopper(num_trials=2, save_path="best.pt")
    for epoch in range(3):
        total = 0.0
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            total += loss.item()
        if not early_stopper.is_continuable(model, total):
            break
    best = torch.load("best.pt", weights_only=False)
    print(type(best).__name__)
