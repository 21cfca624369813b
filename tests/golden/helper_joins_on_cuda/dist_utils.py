"""Distributed helpers of a research repository: the process group is joined on a GPU only."""
import io
import os

import torch
import torch.distributed as dist


def init_distributed_mode(args):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        args.rank = int(os.environ["RANK"])
        args.world_size = int(os.environ["WORLD_SIZE"])
        args.gpu = int(os.environ["LOCAL_RANK"])
    else:
        print("Not using distributed mode")
        args.distributed = False
        return
    args.distributed = True
    torch.cuda.set_device(args.gpu)
    args.dist_backend = "nccl"
    dist.init_process_group(backend=args.dist_backend, world_size=args.world_size, rank=args.rank)
    dist.barrier()


def is_main_process():
    return not dist.is_initialized() or dist.get_rank() == 0


def load_into_ema(ema, state):
    # the EMA helper only takes a file object: hand it the state through memory
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    ema.load_state_dict(torch.load(buffer))
