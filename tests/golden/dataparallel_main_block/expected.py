# A module-level script: the model is built in the __main__ block and put in DataParallel
# when several GPUs are present; train() and test() read the global model.
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

RANK = int(os.environ.get("RANK", 0))
LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")

torch.manual_seed(0)
train_dataset = TensorDataset(torch.randn(64, 5), torch.randint(0, 3, (64,)))
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=8, shuffle=(train_sampler is None), sampler=train_sampler)
test_loader = DataLoader(TensorDataset(torch.randn(16, 5), torch.randint(0, 3, (16,))), batch_size=8)
N_EPOCHS = 2


class Classifier(nn.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc = nn.Linear(n_in, n_out)

    def forward(self, x):
        return self.fc(x)


def train():
    total = 0.0
    for x, y in train_loader:
        output = classifier(x)
        loss = criterion(output, y)
        classifier.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total


def test():
    correct = 0
    with torch.no_grad():
        for x, y in test_loader:
            correct += (classifier(x).argmax(1) == y).sum().item()
    if RANK == 0:
        print(f"accuracy {correct}/{len(test_loader.dataset)}")


if __name__ == "__main__":
    classifier = Classifier(5, 3)
    if torch.cuda.device_count() > 1:
        if RANK == 0:
            print("Let's use", torch.cuda.device_count(), "GPUs!")
        if not DISTRIBUTED:
            classifier = nn.DataParallel(classifier)

    if torch.cuda.is_available():
        classifier.cuda()
    if DISTRIBUTED:
        classifier = DDP(classifier, device_ids=[LOCAL_RANK] if next(classifier.parameters()).is_cuda else None)

    optimizer = torch.optim.Adam(classifier.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()

    for epoch in range(1, N_EPOCHS + 1):
        if train_sampler is not None:
            train_sampler.set_epoch(epoch)
        loss = train()
        if RANK == 0:
            print(f"epoch {epoch} loss {loss:.3f}")
        test()

if DISTRIBUTED:
    dist.destroy_process_group()
