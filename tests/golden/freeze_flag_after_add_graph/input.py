import argparse
import os

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # tensorboard is optional: a stand-in that notes what it is given in a text file

    class SummaryWriter:
        def __init__(self, log_dir):
            os.makedirs(log_dir, exist_ok=True)
            self.path = os.path.join(log_dir, "events.txt")
            self.lines = []

        def add_graph(self, model, example):
            self.lines.append(f"graph {type(model).__name__} {tuple(model(example).shape)}\n")

        def add_scalar(self, tag, value, step):
            self.lines.append(f"{tag} {step} {value:.4f}\n")

        def close(self):
            with open(self.path, "w") as f:
                f.writelines(self.lines)


class Net(nn.Module):
    def __init__(self, classes=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU())
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        return self.fc(self.body(x))


def main(args):
    torch.manual_seed(0)
    writer = SummaryWriter(log_dir="runs/freeze")
    if os.path.exists("./weights") is False:
        os.makedirs("./weights")

    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 3, (64,)))
    loader = DataLoader(data, batch_size=8, shuffle=True)

    model = Net()
    writer.add_graph(model, torch.zeros(2, 8))

    if os.path.exists(args.weights):
        model.load_state_dict(torch.load(args.weights))
    else:
        print("no initial weights")

    # train the head only
    if args.freeze_layers:
        print("freeze every layer but fc")
        for name, para in model.named_parameters():
            if "fc" not in name:
                para.requires_grad_(False)

    pg = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(pg, lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        model.train()
        total = 0.0
        for x, y in loader:
            optimizer.zero_grad()
            loss = criterion(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
        writer.add_scalar("loss", total / len(loader), epoch)
        torch.save(model.state_dict(), "./weights/model-{}.pth".format(epoch))
    writer.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--weights", default="start.pth")
    parser.add_argument("--freeze-layers", type=bool, default=True)
    main(parser.parse_args())
