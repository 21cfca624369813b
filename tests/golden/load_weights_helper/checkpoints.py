"""Saving and restoring the weights of the model the training script hands in."""
import torch


def save_checkpoint(model, path):
    torch.save(model.state_dict(), path)


def load_weights(model, path):
    model.load_state_dict(torch.load(path))
    return model
