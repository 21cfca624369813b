"""Trains the classifier of model.py with the Trainer of trainer.py, which moves it to the GPU."""

import torch
from torch.utils.data import TensorDataset

from model import Classifier
from trainer import Trainer

torch.manual_seed(3)
x = torch.randn(120, 10)
y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
model = Classifier(10, 3)
config = {"learning_rate": 1e-2, "batch_size": 8, "max_iters": 24, "log_every": 6}
Trainer(config, model, TensorDataset(x, y)).run()
