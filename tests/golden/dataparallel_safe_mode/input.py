"""nn.DataParallel switched on by the GPU count, or by a flag that is off by default."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-parallel", action="store_true", help="wrap even on one GPU")
    args = parser.parse_args()

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(96, 8), torch.randn(96, 1))
    loader = DataLoader(dataset, batch_size=24, shuffle=True)

    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    if torch.cuda.device_count() > 1:
        print(f"using {torch.cuda.device_count()} GPUs")
        model = nn.DataParallel(model)
    elif args.data_parallel:
        model = nn.DataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    for epoch in range(2):
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
        print(f"epoch {epoch} loss {loss.item():.4f}")

    model_to_save = model.module if hasattr(model, "module") else model
    torch.save(model_to_save.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
