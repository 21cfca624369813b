# A module-level classifier that moves the model to the GPU only when there is one.
import os

import torch
from torch import nn
import torch.distributed as dist
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

batch_size = 32
learning_rate = 1e-2
num_epochs = 3

torch.manual_seed(0)
train_x = torch.randn(256, 20)
train_y = (train_x[:, :4].sum(dim=1) > 0).long()
test_x = torch.randn(64, 20)
test_y = (test_x[:, :4].sum(dim=1) > 0).long()
train_dataset = TensorDataset(train_x, train_y)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=batch_size, shuffle=(train_sampler is None), sampler=train_sampler)
test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=batch_size, shuffle=False)


class Classifier(nn.Module):
    def __init__(self, in_dim, n_class):
        super().__init__()
        self.linear = nn.Linear(in_dim, n_class)

    def forward(self, x):
        return self.linear(x)


model = Classifier(20, 2)
use_gpu = torch.cuda.is_available()
if use_gpu:
    model = model.cuda()
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if next(model.parameters()).is_cuda else None)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate)


def reduce_over_ranks(value, average=False):
    """`value` summed over every rank (averaged with `average=True`); `value` itself in a single process."""
    if not DISTRIBUTED:
        return value
    total = torch.as_tensor(value, dtype=torch.float64).detach().cpu().clone()
    dist.all_reduce(total)
    if average:
        total /= WORLD_SIZE
    if isinstance(value, torch.Tensor):  # the same kind of value back: `.item()` still works on it
        return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
    if type(value).__module__ == "numpy":
        return total.numpy()
    if isinstance(value, int) and not average:  # a count summed stays a whole number
        return int(total.item())
    return total.item() if total.dim() == 0 else total.tolist()


for epoch in range(num_epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    model.train()
    running_loss = 0.0
    for i, (features, label) in enumerate(train_loader, 1):
        if use_gpu:
            features, label = features.cuda(), label.cuda()
        out = model(features)
        loss = criterion(out, label)
        running_loss += loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    correct = 0
    for features, label in test_loader:
        if use_gpu:
            features, label = features.cuda(), label.cuda()
        with torch.no_grad():
            correct += (model(features).argmax(1) == label).sum().item()
    avg_running_loss = reduce_over_ranks(running_loss, average=True)
    if RANK == 0:
        print(f"epoch {epoch + 1} loss {avg_running_loss / i:.4f} acc {correct / len(test_x):.3f}")

if RANK == 0:
    torch.save(raw_model.state_dict(), "./classifier.pth")

if DISTRIBUTED:
    dist.destroy_process_group()
