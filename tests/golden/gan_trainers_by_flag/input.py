"""Train one of two GANs, picked by --model; each trainer class runs its own loop."""
import argparse

from models.gan import GAN
from models.wgan import WGAN
from utils.data_loader import get_data_loader


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
    train_loader, test_loader = get_data_loader(args)
    model.train(train_loader)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="WGAN", choices=["GAN", "WGAN"])
    parser.add_argument("--batch_size", type=int, default=8)
    parser.add_argument("--generator_iters", type=int, default=4)
    parser.add_argument("--cuda", action="store_true")
    main(parser.parse_args())
