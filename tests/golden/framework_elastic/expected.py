"""Start the training processes with the elastic launcher from Python instead of the torchrun command."""
import torch
import torch.nn as nn
from torch.distributed.launcher.api import LaunchConfig, elastic_launch


def train():
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    config = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node=2, run_id="local", rdzv_backend="c10d")
    elastic_launch(config, train)()
