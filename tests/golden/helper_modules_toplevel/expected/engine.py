"""One epoch of training and one pass of evaluation."""
import torch
import torch.distributed as dist
import torch.nn.functional as F


def train_one_epoch(model, loader, optimizer, epoch, log_every=4):
    model.train()
    for step, (xb, yb) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        if step % log_every == 0:
            if not dist.is_initialized() or dist.get_rank() == 0:
                print(f"epoch {epoch} step {step}: loss {loss.item():.4f}")


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    total, n = 0.0, 0
    for xb, yb in loader:
        total += F.mse_loss(model(xb), yb, reduction="sum").item()
        n += len(xb)
    return total / n
