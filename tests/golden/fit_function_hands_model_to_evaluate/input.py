"""The script calls fit() of its own module, which builds its model and its loaders, trains, hands the
model to evaluate() of the same module after each epoch (a BatchNorm model; evaluate reads its width)
and saves its weights."""
import argparse

from fitting import fit


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="model.pt")
    args = parser.parse_args()
    fit(args.epochs, args.out)


if __name__ == "__main__":
    main()
