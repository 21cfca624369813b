"""DDP211's fix (unsafe): full-batch training on tensors built once (`prediction = net(x)`, then
`loss_func(prediction, y)` at every step) takes every WORLD_SIZE-th sample on each rank, one size on
every rank (`x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]`), for the model's inputs and the
targets the loss compares its output with, in the training loop only. A plain run takes every sample
as before. Unsafe: it assumes the first dimension is the sample dimension and that the loss averages
over samples. A loss that sums, or a sequence walked step by step, keeps the finding with the reason
and no fix."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    x = torch.linspace(-1, 1, 64).reshape(32, 2)
    y = (x.sum(dim=1) > 0).long()
    w = torch.tensor([1.0, 2.0])
    net = nn.Linear(2, 2)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for epoch in range(20):
        {step}
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(net(x).argmax(1).eq(y).float().mean().item())
    """
)


def _ddp211(src: str):
    return [d for d in check_source(src) if d.code == "DDP211"]


def test_the_fix_is_unsafe_and_cuts_inputs_and_targets_in_the_loop_only():
    src = SCRIPT.format(step="loss = nn.functional.cross_entropy(net(x), y, weight=w)")
    [d] = _ddp211(src)
    assert d.fix == "unsafe", d
    assert fix_source(src).code.count("[RANK::WORLD_SIZE]") == 0  # a safe apply leaves it to the author
    code = fix_source(src, unsafe_fixes=True).code
    # parts of one size (DDP averages the parts' gradients: the whole batch's, for a loss that averages)
    assert "x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]" in code
    assert "y_shard = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]\n" in code
    assert (
        "loss = nn.functional.cross_entropy(net(x_shard), y_shard, weight=w)\n" in code
    )  # the class weights stay whole
    assert "print(net(x).argmax(1).eq(y)" in code or "(x).argmax(1).eq(y)" in code  # after the loop: every sample
    assert [d for d in check_source(code) if d.code == "DDP211"] == []
    assert fix_source(code, unsafe_fixes=True).code == code


def test_an_operand_beside_the_models_output_is_a_target():
    src = SCRIPT.format(step="loss = (net(x) - nn.functional.one_hot(y, 2)).pow(2).mean()")
    code = fix_source(src, unsafe_fixes=True).code
    assert "loss = (net(x_shard) - nn.functional.one_hot(y_shard, 2)).pow(2).mean()\n" in code


def test_a_loss_that_sums_keeps_the_finding_without_a_fix():
    src = SCRIPT.format(step='loss = nn.functional.cross_entropy(net(x), y, reduction="sum")')
    [d] = _ddp211(src)
    assert d.fix == "none" and "(no fix: " in d.message and "sums" in d.message, d.message
    assert "[RANK::WORLD_SIZE]" not in fix_source(src, unsafe_fixes=True).code
    made = SCRIPT.format(step="loss = criterion(net(x), y)").replace(
        "\noptimizer = ", '\ncriterion = nn.CrossEntropyLoss(reduction="sum")\noptimizer = '
    )
    assert "\ncriterion = nn.CrossEntropyLoss(" in made
    [d] = _ddp211(made)
    assert d.fix == "none" and "sums" in d.message, d.message


def test_a_sequence_walked_step_by_step_keeps_the_finding_without_a_fix():
    walked = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        torch.manual_seed(0)
        inputs = torch.eye(4)[[0, 1, 2, 2]]
        labels = torch.tensor([1, 2, 2, 3])
        cell = nn.RNNCell(4, 4)
        optimizer = torch.optim.Adam(cell.parameters(), lr=0.1)
        for epoch in range(20):
            hidden = torch.zeros(1, 4)
            loss = 0
            for x, label in zip(inputs, labels):
                hidden = cell(x.unsqueeze(0), hidden)
                loss = loss + nn.functional.cross_entropy(hidden, label.unsqueeze(0))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        """
    )
    [d] = _ddp211(walked)
    assert d.fix == "none" and "(no fix: " in d.message, d.message
    assert "[RANK::WORLD_SIZE]" not in fix_source(walked, unsafe_fixes=True).code


def test_a_target_drawn_at_random_is_cut_with_the_inputs():
    """`y = x.pow(2) + 0.2 * torch.rand(x.size())` with no seed: DDP210 broadcasts it, and the part of it
    each rank trains on is cut with `x`'s (left whole, a rank's 50 predictions would meet 100 targets)."""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn

        x = torch.unsqueeze(torch.linspace(-1, 1, 100), dim=1)
        y = x.pow(2) + 0.2 * torch.rand(x.size())
        net = nn.Sequential(nn.Linear(1, 10), nn.ReLU(), nn.Linear(10, 1))
        optimizer = torch.optim.SGD(net.parameters(), lr=0.2)
        for t in range(100):
            prediction = net(x)
            loss = nn.functional.mse_loss(prediction, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if t % 50 == 0:
                print(prediction.shape == y.shape)
        """
    )
    result = fix_source(src, unsafe_fixes=True)
    assert "    dist.broadcast(y, src=0)\n" in result.code
    assert "y_shard = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]\n" in result.code
    assert "loss = nn.functional.mse_loss(prediction, y_shard)\n" in result.code
    assert "print(prediction.shape == y_shard.shape)" in result.code  # every read in the loop
    assert result.incomplete == [], [b.format() for b in result.incomplete]


CONVERTED_IN_THE_LOOP = textwrap.dedent(
    """
    import numpy as np
    import torch
    import torch.nn as nn

    x_train = np.linspace(-1, 1, 30, dtype=np.float32).reshape(15, 2)
    y_train = (x_train.sum(axis=1, keepdims=True) > 0).astype(np.float32)
    model = nn.Linear(2, 1)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(60):
        inputs = torch.from_numpy(x_train)
        targets = torch.from_numpy(y_train)
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    predicted = model(torch.from_numpy(x_train)).detach().numpy()
    """
)


def test_arrays_made_tensors_at_every_step_are_the_full_batch_too():
    """`inputs = torch.from_numpy(x_train)` inside the loop converts the same whole array at every step:
    that is full-batch training on `x_train` (and `y_train`), not data loaded per step."""
    [d] = _ddp211(CONVERTED_IN_THE_LOOP)
    assert "all of `x_train` at every step" in d.message and d.fix == "unsafe", d.message
    code = fix_source(CONVERTED_IN_THE_LOOP, unsafe_fixes=True).code
    assert "x_train_shard = x_train[RANK::WORLD_SIZE][: len(x_train) // WORLD_SIZE]" in code
    assert "y_train_shard = y_train[RANK::WORLD_SIZE][: len(y_train) // WORLD_SIZE]\n" in code
    assert "    inputs = torch.from_numpy(x_train_shard)\n    targets = torch.from_numpy(y_train_shard)\n" in code
    assert "predicted = raw_model(torch.from_numpy(x_train))" in code or "model(torch.from_numpy(x_train))" in code
    assert _ddp211(code) == []


GRAPH = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    features = torch.eye(6)
    adj = (torch.ones(6, 6) / 6).to_sparse()
    labels = torch.tensor([0, 1, 0, 1, 0, 1])
    idx_train = torch.arange(4)


    class Propagate(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(6, 2)

        def forward(self, x, a=None):
            return self.fc(x) if a is None else torch.sparse.mm(a, self.fc(x))


    model = Propagate()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(10):
        output = {call}
        loss = nn.functional.cross_entropy({output}, {labels})
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)


def test_several_whole_inputs_or_a_part_compared_by_index_get_no_fix():
    """A graph's features and adjacency (two whole inputs whose rows are not independent samples), or
    a loss over the rows an index picks (`output[idx_train]`): cutting rows by rank would break them."""
    two = GRAPH.format(call="model(features, adj)", output="output", labels="labels")
    found = _ddp211(two)
    assert found and all(d.fix == "none" and "several" in d.message for d in found), [d.message for d in found]
    assert "[RANK::WORLD_SIZE]" not in fix_source(two, unsafe_fixes=True).code
    picked = GRAPH.format(call="model(features)", output="output[idx_train]", labels="labels[idx_train]")
    [d] = _ddp211(picked)
    assert d.fix == "none" and "(no fix: " in d.message and "index" in d.message, d.message
    assert "[RANK::WORLD_SIZE]" not in fix_source(picked, unsafe_fixes=True).code


CLOSURE = textwrap.dedent(
    """
    import torch
    import torch.nn as nn

    torch.manual_seed(0)
    inputs = torch.linspace(0, 6.28, 40).reshape(10, 4)
    targets = torch.sin(inputs)
    model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 4))
    criterion = nn.MSELoss()
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5)
    for step in range(5):

        def closure():
            optimizer.zero_grad()
            loss = criterion(model(inputs), targets)
            loss.backward()
            return loss

        optimizer.step(closure)
    """
)


def test_full_batch_training_through_an_optimizers_closure_is_reported_without_a_fix():
    """LBFGS evaluates the closure as many times as its line search needs: the same full batch on every
    rank, and no fix (ranks with parts of different losses would run different numbers of backward
    passes, and DDP's all-reduces would no longer pair up)."""
    [d] = _ddp211(CLOSURE)
    assert "all of `inputs`" in d.message and d.fix == "none" and "closure" in d.message, d.message
    result = fix_source(CLOSURE, unsafe_fixes=True)
    assert "[RANK::WORLD_SIZE]" not in result.code and "DDP211" in [b.code for b in result.incomplete]


HELPER_DATA = textwrap.dedent(
    """
    import torch
    import torch.nn as nn


    def load_points():
        x = torch.linspace(-1, 1, 64).reshape(32, 2)
        return x, (x.sum(dim=1) > 0).long()


    def main():
        x, y = load_points()
        model = nn.Linear(2, 2)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(20):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


    if __name__ == "__main__":
        main()
    """
)


def test_tensors_a_helper_of_the_script_returns_once_are_the_full_batch_too():
    [d] = _ddp211(HELPER_DATA)
    assert "all of `x`" in d.message and d.fix == "unsafe", d.message
    code = fix_source(HELPER_DATA, unsafe_fixes=True).code
    assert "    x_shard = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]" in code
    assert "loss = nn.functional.cross_entropy(model(x_shard), y_shard)" in code


CODEC_MODULE = textwrap.dedent(
    """
    import torch


    class Codec:
        def __init__(self, n):
            self.n = n

        def encode(self, labels):
            return torch.as_tensor(labels) % self.n, len(labels)
    """
)
CODEC = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    from codec import Codec


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.emb = nn.Embedding(4, 4)

        def forward(self, x, text):
            return self.fc(x) + self.emb(text)


    torch.manual_seed(0)
    codec = Codec(4)
    images = torch.linspace(0, 1, 64).reshape(16, 4)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(10):
        idx = torch.randint(0, 16, (4,))
        text, length = codec.encode(idx)
        loss = model(images[idx], text).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    """
)


def test_a_value_a_helper_object_makes_at_every_step_is_no_full_batch(tmp_path):
    """`text, length = codec.encode(idx)` in the loop, `Codec` a class of the script's own module: the
    codec is built once, but what its method returns at every step is new data, not the same whole
    tensor (the corpus's dtrb-train)."""
    (tmp_path / "codec.py").write_text(CODEC_MODULE)
    script = tmp_path / "train.py"
    script.write_text(CODEC)
    assert [d for d in check_source(CODEC, path=str(script)) if d.code == "DDP211"] == []
