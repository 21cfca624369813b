"""Trains by step count over an endless generator that restarts the loader when it runs out."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def inf_generator(iterable):
    """Allows training with DataLoaders in a single infinite loop."""
    iterator = iterable.__iter__()
    while True:
        try:
            yield iterator.__next__()
        except StopIteration:
            iterator = iterable.__iter__()


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(64, 4)
    y = x.sum(1, keepdim=True)
    train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
    data_gen = inf_generator(train_loader)
    batches_per_epoch = len(train_loader)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for itr in range(3 * batches_per_epoch):
        optimizer.zero_grad()
        xb, yb = data_gen.__next__()
        loss = nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        if itr % batches_per_epoch == 0:
            print(f"epoch {itr // batches_per_epoch}: loss {loss.item():.4f}")
