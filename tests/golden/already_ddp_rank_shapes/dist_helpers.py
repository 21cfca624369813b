"""Process-group helpers the training script imports."""
import torch
import torch.distributed as dist


def is_leader():
    return not dist.is_initialized() or dist.get_rank() == 0


def reduce_sum(value):
    """The sum of `value` over every rank (the value itself in a plain run)."""
    if not dist.is_initialized():
        return value
    total = torch.tensor(float(value))
    dist.all_reduce(total)
    return total.item()
