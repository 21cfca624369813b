import json

import torch


def main():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        loss = model(torch.randn(4, 2)).sum()
        loss.backward()
        opt.step()
    with open("metrics.json", "w") as f:
        stats = {"loss": loss.item()}
        json.dump(stats, f)
    best = stats["loss"]
    return best


if __name__ == "__main__":
    main()
