"""A tab-separated log of the numbers of each epoch."""
import os
import torch.distributed as dist

__all__ = ["Logger", "save_table"]


def save_table(fname, name, value):
    if not dist.is_initialized() or dist.get_rank() == 0:
        with open(fname, "w") as f:
            f.write(f"{name}\t{value}\n")


class Logger(object):
    def __init__(self, fpath, resume=False):
        self.names = []
        if resume and os.path.exists(fpath):
            self.file = open(fpath, "a")
        else:
            self.file = open(fpath, "w")

    def set_names(self, names):
        self.names = names
        self.file.write("\t".join(names) + "\n")
        self.file.flush()

    def append(self, numbers):
        self.file.write("\t".join(f"{n:.6f}" for n in numbers) + "\n")
        self.file.flush()

    def close(self):
        self.file.close()
