"""Trains what config.json names: the data loader, the architecture, the optimizer and the trainer."""
import argparse
import json
from pathlib import Path

import torch

import data_loaders as module_data
import models as module_arch
import trainer as module_trainer
from utils import init_obj


def main(config):
    torch.manual_seed(config["seed"])
    data_loader = init_obj(module_data, config["data_loader"])
    model = init_obj(module_arch, config["arch"])
    optimizer = init_obj(torch.optim, config["optimizer"], model.parameters())
    trainer = init_obj(module_trainer, config["trainer"], model, optimizer, data_loader=data_loader)
    trainer.train()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-c", "--config", default=str(Path(__file__).with_name("config.json")))
    args = parser.parse_args()
    with open(args.config) as f:
        main(json.load(f))
