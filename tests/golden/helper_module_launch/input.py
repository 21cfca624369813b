"""Joins and leaves its process group through the project's own helpers."""
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

import distributed_utils as du


def main():
    du.init_distributed()
    torch.manual_seed(1)
    dataset = TensorDataset(torch.randn(80, 5), torch.randint(0, 2, (80,)))
    loader = DataLoader(dataset, batch_size=10, shuffle=True)
    model = nn.Linear(5, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            optimizer.step()
    if du.is_main_process():
        torch.save(model.state_dict(), "helper_module_launch.pt")
    du.cleanup()


if __name__ == "__main__":
    main()
