from .engine import evaluate, train_one_epoch
