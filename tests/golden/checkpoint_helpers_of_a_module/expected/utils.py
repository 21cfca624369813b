"""Checkpoint helpers that build the file's path from the options they are given."""

import os

import torch
import torch.distributed as dist


def save_checkpoint(model, epoch, args):
    model_path = os.path.join(args.save_dir, args.name)
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save({"state_dict": model.state_dict(), "epoch": epoch}, model_path)


def load_checkpoint(model, folder_dir, filename):
    model_path = os.path.join(folder_dir, filename)
    checkpoint = torch.load(model_path)
    model.load_state_dict(checkpoint["state_dict"])
    return model, checkpoint["epoch"]
