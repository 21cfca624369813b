import torch
import torch.nn as nn

from batches import BatchIterator


def train(batches, model, optimizer, epoch):
    total = 0.0
    for i, (x, y) in enumerate(batches):
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch}: mean batch loss {total / len(batches):.4f}")


def main():
    torch.manual_seed(0)
    inputs, targets = torch.randn(64, 8), torch.randn(64, 1)
    train_batches = BatchIterator(inputs, targets, batch_size=8)
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        train(train_batches, model, optimizer, epoch)


if __name__ == "__main__":
    main()
