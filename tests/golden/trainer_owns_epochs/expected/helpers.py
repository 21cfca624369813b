"""Saving helpers of the script beside it: a checkpoint and a config file."""
import json
import os

import torch
import torch.distributed as dist


def save_checkpoint(state, filename):
    if not dist.is_initialized() or dist.get_rank() == 0:
        torch.save(state, filename)


def save_config(folder, config):
    os.makedirs(folder, exist_ok=True)
    if not dist.is_initialized() or dist.get_rank() == 0:
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(config, f, indent=2)
