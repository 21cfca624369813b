"""Already DDP, with the wrapper used as if it were the model."""
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1


class Classifier(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.num_classes = num_classes
        self.net = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, num_classes))

    def forward(self, x):
        return self.net(x)

    def accuracy(self, x, y):
        return (self.forward(x).argmax(1) == y).float().mean().item()


def main():
    if DISTRIBUTED:
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")

    device = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
    sampler = DistributedSampler(dataset) if DISTRIBUTED else None
    loader = DataLoader(dataset, batch_size=8, shuffle=(sampler is None), sampler=sampler)
    test_x, test_y = torch.randn(32, 4, device=device), torch.randint(0, 3, (32,), device=device)

    model = Classifier().to(device)
    initial = {k: v.clone() for k, v in model.state_dict().items()}
    raw_model = model
    if DISTRIBUTED:
        model = DDP(model, device_ids=[LOCAL_RANK])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(2):
        sampler and sampler.set_epoch(epoch)
        model.train()
        for i, (xb, yb) in enumerate(loader):
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(model(xb), yb) / 2
            loss.backward()
            if i % 2 == 1:
                optimizer.step()
                optimizer.zero_grad()
        model.eval()
        acc = model.accuracy(test_x, test_y)  # custom method through the wrapper
        if RANK == 0:
            print(f"epoch {epoch} classes {model.num_classes} acc {acc:.3f}")
            print(f"inner classes {model.module.num_classes if DISTRIBUTED else raw_model.num_classes}")

    # start over from the initial weights and check we are back where we began
    model.load_state_dict(initial)
    if RANK == 0:
        print(f"reset acc {raw_model.accuracy(test_x, test_y):.3f}")

    if DISTRIBUTED:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
