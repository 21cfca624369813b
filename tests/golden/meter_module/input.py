import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import utils
from utils import AverageMeter


def train_epoch(model, loader, optimizer):
    model.train()
    losses = AverageMeter()
    top1 = utils.AverageMeter("Acc@1", ":6.2f")
    for x, y in loader:
        output = model(x)
        loss = F.cross_entropy(output, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.update(loss.item(), x.size(0))
        top1.update(output.argmax(1).eq(y).float().mean().item() * 100, x.size(0))
    return losses, top1


def main():
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 8), torch.randint(0, 4, (64,)))
    loader = DataLoader(dataset, batch_size=8, shuffle=True)
    model = nn.Linear(8, 4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(1, 3):
        losses, top1 = train_epoch(model, loader, optimizer)
        print(f"epoch {epoch}: loss {losses.avg:.5f} acc {top1.avg:.2f} over {losses.count} samples")


if __name__ == "__main__":
    main()
