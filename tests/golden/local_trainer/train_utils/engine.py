import torch
from torch import nn


def train_one_epoch(model, optimizer, data_loader, device, lr_scheduler=None):
    model.train()
    total = 0.0
    for image, target in data_loader:
        image, target = image.to(device), target.to(device)
        loss = nn.functional.cross_entropy(model(image), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if lr_scheduler is not None:
            lr_scheduler.step()
        total += loss.item()
    return total / len(data_loader), optimizer.param_groups[0]["lr"]


def evaluate(model, data_loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for image, target in data_loader:
            image, target = image.to(device), target.to(device)
            correct += (model(image).argmax(1) == target).sum().item()
    return correct / len(data_loader.dataset)
