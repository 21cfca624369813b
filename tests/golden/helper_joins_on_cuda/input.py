"""Already distributed: joins through dist_utils (GPU only), keeps an EMA copy on the CPU."""
import argparse

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import dist_utils


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--ema-cpu", action="store_true")
    args = parser.parse_args()
    dist_utils.init_distributed_mode(args)
    torch.manual_seed(0)

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = nn.Linear(8, 2).to(device)
    ema = nn.Linear(8, 2).to("cpu" if args.ema_cpu else device)  # the EMA may live on the CPU

    data = TensorDataset(torch.randn(64, 8), torch.randint(0, 2, (64,)))
    sampler = DistributedSampler(data) if args.distributed else None
    loader = DataLoader(data, batch_size=8, sampler=sampler, shuffle=sampler is None)

    model_without_ddp = model
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model, device_ids=[args.gpu])
        model_without_ddp = model.module
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist_utils.load_into_ema(ema, model_without_ddp.state_dict())
        if dist_utils.is_main_process():
            print(f"epoch {epoch} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
