"""A solver class that fetches its data in a method, run through an instance from main() (a file://
address of the points.csv beside this script stands in for a web address)."""
import argparse
import os
import urllib.request
from pathlib import Path

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

SOURCE = (Path(__file__).resolve().parent / "points.csv").as_uri()


class Solver:
    def __init__(self, args):
        self.epochs = args.epochs
        self.batch_size = args.batch_size

    def load_data(self):
        os.makedirs("data", exist_ok=True)
        path = os.path.join("data", "points.csv")
        urllib.request.urlretrieve(SOURCE, path)  # fetched on every run
        rows = [line.split(",") for line in Path(path).read_text().splitlines() if line]
        table = torch.tensor([[float(v) for v in row] for row in rows])
        self.loader = DataLoader(TensorDataset(table[:, :3], table[:, 3:]), batch_size=self.batch_size, shuffle=True)

    def load_model(self):
        self.model = nn.Linear(3, 1)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def run(self):
        self.load_data()
        self.load_model()
        for epoch in range(self.epochs):
            for x, y in self.loader:
                self.optimizer.zero_grad()
                loss = nn.functional.mse_loss(self.model(x), y)
                loss.backward()
                self.optimizer.step()
            print(f"epoch {epoch}: loss {loss.item():.4f}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    torch.manual_seed(0)
    solver = Solver(args)
    solver.run()


if __name__ == "__main__":
    main()
