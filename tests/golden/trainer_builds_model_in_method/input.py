"""The script hands a Trainer of its own module its settings; Trainer.train() builds the data, the
model and its optimizer as locals, trains, and saves the model's weights."""
import argparse

from trainer import Trainer


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="model.pt")
    args = parser.parse_args()
    Trainer(args).train()


if __name__ == "__main__":
    main()
