"""The script parses its settings and calls fit() of its own module, which builds the data, the model
and its optimizer as locals, trains, and saves the model's weights."""
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
