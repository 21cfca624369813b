"""Entry point: reads the options and hands over to the engine, which does all the training."""

import argparse

from engine import run

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    run(args.epochs)
