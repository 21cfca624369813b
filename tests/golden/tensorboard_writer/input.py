import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # tensorboard is optional: a stand-in that keeps scalars in a text file

    class SummaryWriter:
        def __init__(self, log_dir):
            self.path = f"{log_dir}.txt"
            self.lines = []

        def add_scalar(self, tag, value, step):
            self.lines.append(f"{tag} {step} {value:.4f}\n")

        def close(self):
            with open(self.path, "w") as f:
                f.writelines(self.lines)


def log_epoch(writer, epoch, loss):
    writer.add_scalar("epoch_loss", loss, epoch)


def main():
    torch.manual_seed(0)
    loader = DataLoader(TensorDataset(torch.randn(96, 4), torch.randn(96, 2)), batch_size=12, shuffle=True)
    model = nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    writer = SummaryWriter("runs_tb")
    step = 0
    for epoch in range(2):
        for xb, yb in loader:
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            optimizer.step()
            writer.add_scalar("loss", loss.item(), step)
            step += 1
        log_epoch(writer, epoch, loss.item())
    writer.close()
    print("steps", step)


if __name__ == "__main__":
    main()
