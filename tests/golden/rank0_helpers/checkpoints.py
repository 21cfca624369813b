"""Checkpoint helpers shared by the training scripts."""
import torch


def save_checkpoint(model, epoch, path):
    torch.save({"model": model.state_dict(), "epoch": epoch}, path)


def load_checkpoint(model, path):
    state = torch.load(path, map_location="cpu")
    model.load_state_dict(state["model"])
    return state["epoch"]
