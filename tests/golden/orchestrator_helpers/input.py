"""Puts the parts of lib.py together and trains; torch itself is only imported there."""

from lib import build_loader, build_model, build_optimizer, train

if __name__ == "__main__":
    model = build_model()
    optimizer = build_optimizer(model)
    loader = build_loader()
    train(model, optimizer, loader, epochs=3)
