"""Train one of two GANs, picked by --model; each trainer class runs its own loop."""
import argparse
import os

from models.gan import GAN
from models.wgan import WGAN
import torch
import torch.distributed as dist
from utils.data_loader import get_data_loader


LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
DISTRIBUTED = WORLD_SIZE > 1

if DISTRIBUTED:
    if torch.cuda.is_available():
        torch.cuda.set_device(LOCAL_RANK)
    dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


def main(args):
    model = None
    if args.model == "GAN":
        model = GAN(args)
    elif args.model == "WGAN":
        model = WGAN(args)
    else:
        print("Model type non-existing. Try again.")
        exit(-1)

    # Load datasets to train and test loaders
    train_loader, test_loader = get_data_loader(args, distributed=DISTRIBUTED)
    model.train(train_loader)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="WGAN", choices=["GAN", "WGAN"])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--generator_iters", type=int, default=4)
    parser.add_argument("--cuda", action="store_true")
    main(parser.parse_args())

if DISTRIBUTED:
    dist.destroy_process_group()
