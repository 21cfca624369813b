"""Saving and restoring the weights of the model the training script hands in."""
import torch
import torch.distributed as dist


def save_checkpoint(model, path):
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(model.state_dict(), path)


def load_weights(model, path):
    model.load_state_dict(torch.load(path))
    return model
