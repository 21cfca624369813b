"""Output folders made after an existence check, on what will be every rank."""
import os
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

OUT = os.path.join("runs", "exp1")


def main():
    torch.manual_seed(0)
    # one folder per experiment
    if not os.path.exists(OUT):
        os.makedirs(OUT)
    ckpt_dir = Path(OUT) / "checkpoints"
    if not ckpt_dir.exists():
        ckpt_dir.mkdir(parents=True)
    if not os.path.isdir("samples"): os.makedirs("samples")  # generated images

    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    loader = DataLoader(dataset, batch_size=8)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(2):
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
        torch.save(model.state_dict(), ckpt_dir / f"epoch{epoch}.pt")
    print(sorted(p.name for p in ckpt_dir.iterdir()))


if __name__ == "__main__":
    main()
