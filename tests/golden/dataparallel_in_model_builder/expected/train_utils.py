import torch
import torch.distributed as dist
import torch.optim as optim


def set_optimizer(model, lr):
    return optim.SGD(model.parameters(), lr=lr, momentum=0.9)


def save_model(model, optimizer, path):
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(state, path)
