import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

from trainer import Trainer

torch.manual_seed(0)
ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
loader = DataLoader(ds, batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
Trainer(model, loader).fit(2)
