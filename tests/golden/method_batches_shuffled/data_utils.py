"""Windows of a synthetic multivariate series, held in memory, and a generator of batches of them."""

import torch


class Windows:
    def __init__(self, rows, cols, window, horizon, train=0.6, valid=0.2):
        g = torch.Generator().manual_seed(7)
        t = torch.arange(rows, dtype=torch.float32).unsqueeze(1)
        series = torch.sin(t / 5 + torch.arange(cols)) + 0.1 * torch.randn(rows, cols, generator=g)
        self.m = cols
        self.window, self.horizon = window, horizon
        n_train, n_valid = int(rows * train), int(rows * (train + valid))
        self.train = self._batchify(series, range(window + horizon - 1, n_train))
        self.valid = self._batchify(series, range(n_train, n_valid))

    def _batchify(self, series, idx_set):
        X = torch.zeros(len(idx_set), self.window, self.m)
        Y = torch.zeros(len(idx_set), self.m)
        for i, end in enumerate(idx_set):
            start = end - self.window - self.horizon + 1
            X[i] = series[start : start + self.window]
            Y[i] = series[end]
        return X, Y

    def get_batches(self, inputs, targets, batch_size, shuffle=True):
        length = len(inputs)
        if shuffle:
            index = torch.randperm(length)
        else:
            index = torch.LongTensor(range(length))
        start_idx = 0
        while start_idx < length:
            end_idx = min(length, start_idx + batch_size)
            excerpt = index[start_idx:end_idx]
            yield inputs[excerpt], targets[excerpt]
            start_idx += batch_size
