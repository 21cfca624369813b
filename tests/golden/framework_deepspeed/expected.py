"""Train with DeepSpeed: its engine owns the process group, the optimizer and the gradient sync."""
import argparse

import deepspeed
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--local_rank", type=int, default=-1)
    parser = deepspeed.add_config_arguments(parser)
    args = parser.parse_args()
    model = nn.Linear(4, 1)
    dataset = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    engine, optimizer, loader, _ = deepspeed.initialize(
        args=args, model=model, model_parameters=model.parameters(), training_data=dataset
    )
    for x, y in loader:
        loss = nn.functional.mse_loss(engine(x.to(engine.device)), y.to(engine.device))
        engine.backward(loss)
        engine.step()
    engine.save_checkpoint("checkpoints")


if __name__ == "__main__":
    main()
