"""Process-group helpers of this project."""
import os

import torch
import torch.distributed as dist


def init_distributed():
    if int(os.environ.get("WORLD_SIZE", 1)) > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def cleanup():
    if dist.is_initialized():
        dist.destroy_process_group()
