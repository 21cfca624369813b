"""Trains what config.json names: the data loader, the architecture, the optimizer and the trainer."""
import argparse
import json
import os
from pathlib import Path

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import data_loaders as module_data
import models as module_arch
import trainer as module_trainer
from utils import init_obj


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


def main(config):
    torch.manual_seed(config["seed"])
    data_loader = init_obj(module_data, config["data_loader"])
    model = init_obj(module_arch, config["arch"])
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
    optimizer = init_obj(torch.optim, config["optimizer"], model.parameters())
    trainer = init_obj(module_trainer, config["trainer"], model, optimizer, data_loader=data_loader)
    trainer.train()


if __name__ == "__main__":
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--config", default=str(Path(__file__).with_name("config.json")))
    args = parser.parse_args()
    with open(args.config) as f:
        main(json.load(f))

    if DISTRIBUTED:
        dist.destroy_process_group()
