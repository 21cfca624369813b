"""Trains the classifier of model.py with the Trainer of trainer.py, which moves it to the GPU."""

import os

import torch
import torch.distributed as dist
from torch.utils.data import TensorDataset

from model import Classifier
from trainer import Trainer

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(3)
x = torch.randn(120, 10)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
model = Classifier(10, 3)
config = {"learning_rate": 1e-2, "batch_size": 8, "max_iters": 24, "log_every": 6}
Trainer(config, model, TensorDataset(x, y)).run()

if DISTRIBUTED:
    dist.destroy_process_group()
