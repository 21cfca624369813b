"""Distributed helpers in the style many training repositories keep beside their scripts."""
import builtins
import os

import torch
import torch.distributed as dist


def setup_for_distributed(is_master):
    """Silence print on every process but the master (`print(..., force=True)` still prints)."""
    builtin_print = builtins.print

    def print(*args, **kwargs):
        force = kwargs.pop("force", False)
        if is_master or force:
            builtin_print(*args, **kwargs)

    builtins.print = print


def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
        args.gpu = int(os.environ["LOCAL_RANK"])
        args.distributed = True
    else:
        args.rank, args.world_size, args.gpu = 0, 1, 0
        args.distributed = False
        return
    if torch.cuda.is_available():
        torch.cuda.set_device(args.gpu)
    dist.init_process_group("gloo")
    dist.barrier()
    setup_for_distributed(args.rank == 0)


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def save_on_master(*args, **kwargs):
    if is_main_process():
        torch.save(*args, **kwargs)
