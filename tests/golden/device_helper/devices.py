"""Device helpers shared by the training scripts of this folder."""
import torch
import torch.distributed as dist


def data_device():
    if torch.cuda.is_available() and dist.is_initialized():
        return torch.device(f"cuda:{dist.get_rank()}")
    return torch.device("cpu")
