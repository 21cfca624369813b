"""Batches cut by hand from in-memory tensors, in a new order each pass."""

import torch


class BatchIterator:
    def __init__(self, inputs, targets, batch_size):
        self.inputs = inputs
        self.targets = targets
        self.batch_size = batch_size

    def __len__(self):
        return len(self.inputs) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.inputs))
        for start in range(0, len(self) * self.batch_size, self.batch_size):
            picked = order[start : start + self.batch_size]
            yield self.inputs[picked], self.targets[picked]
