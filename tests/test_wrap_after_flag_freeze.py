"""A freeze under a flag (`if args.freeze_layers: for name, p in model.named_parameters(): ...
p.requires_grad_(False)`) prepares the model like an unconditional one: the DDP wrap goes after it and
before the optimizer, else DDP waits for gradients of the frozen parameters (DDP312). A writer's graph
of the model (`writer.add_graph(model, x)`) before the freeze does not stop the wrap from moving past
it. DDP420 reads `if os.path.exists(d) is False:` (and `== False`) as `if not os.path.exists(d):`."""

from __future__ import annotations

import textwrap

import pytest

from ddpfix import fix_source

SCRIPT = textwrap.dedent(
    """
    import os
    import torch
    import torch.nn as nn
    from torch.utils.data import DataLoader, TensorDataset


    def main(freeze, writer):
        torch.manual_seed(0)
        {makedirs}
        data = TensorDataset(torch.randn(32, 8), torch.randint(0, 3, (32,)))
        loader = DataLoader(data, batch_size=4, shuffle=True)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        {graph}
        if freeze:
            print("head only")
            for name, para in model.named_parameters():
                if not name.startswith("2."):
                    para.requires_grad_(False)
        pg = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.SGD(pg, lr=0.1)
        for epoch in range(2):
            for x, y in loader:
                loss = nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
        torch.save(model.state_dict(), "out/model.pt")


    if __name__ == "__main__":
        main(True, None)
    """
).lstrip()


def _fixed(makedirs: str = 'os.makedirs("out", exist_ok=True)', graph: str = "pass"):
    return fix_source(SCRIPT.format(makedirs=makedirs, graph=graph))


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines()]


@pytest.mark.parametrize("graph", ["pass", "writer.add_graph(model, torch.zeros(1, 8))"])
def test_the_wrap_goes_after_a_freeze_under_a_flag(graph):
    result = _fixed(graph=graph)
    lines = _lines(result.code)
    wrap = next(i for i, line in enumerate(lines) if line.startswith("model = DDP(model"))
    freeze = lines.index("para.requires_grad_(False)")
    optimizer = next(i for i, line in enumerate(lines) if line.startswith("pg = "))
    assert freeze < wrap < optimizer
    assert not result.incomplete
    assert "DDP312" not in {d.code for d in result.diagnostics}


def test_a_graph_of_the_model_stays_with_the_plain_model():
    lines = _lines(_fixed(graph="writer.add_graph(model, torch.zeros(1, 8))").code)
    graph = next(i for i, line in enumerate(lines) if ".add_graph(" in line)
    wrap = next(i for i, line in enumerate(lines) if line.startswith("model = DDP(model"))
    assert graph < wrap and lines[graph].endswith("add_graph(model, torch.zeros(1, 8))")


@pytest.mark.parametrize("test", ['os.path.exists("out") is False', 'os.path.isdir("out") == False'])
def test_makedirs_after_a_negative_test_spelled_with_false_gets_exist_ok(test):
    makedirs = f'if {test}:\n        os.makedirs("out")'
    result = _fixed(makedirs=makedirs)
    assert 'os.makedirs("out", exist_ok=True)' in result.code
    assert test not in result.code  # the test goes with it: one statement
    fixed = [d for d in result.diagnostics if d.code == "DDP420"]
    assert fixed and all(d.applied for d in fixed)
    assert not result.incomplete


def test_a_positive_test_is_no_existence_check():
    makedirs = 'if os.path.exists("out") is True:\n        os.makedirs("out")'
    result = _fixed(makedirs=makedirs)
    assert 'os.makedirs("out")' in result.code
    assert 'os.makedirs("out", exist_ok=True)' not in result.code


def test_a_block_that_trains_and_swaps_weights_in_is_no_preparation():
    """A `try:` around the epoch loop whose averaged-weights swap (`for prm in model.parameters():
    prm.data = ...`, as ASGD scripts do) writes parameters: the wrap stays before the training."""
    src = textwrap.dedent(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        torch.manual_seed(0)
        loader = DataLoader(TensorDataset(torch.randn(32, 8), torch.randn(32, 1)), batch_size=4, shuffle=True)
        model = nn.Linear(8, 1)
        optimizer = torch.optim.ASGD(model.parameters(), lr=0.1, t0=0)


        def train():
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.mse_loss(model(x), y).backward()
                optimizer.step()


        try:
            for epoch in range(2):
                train()
                saved = {}
                for prm in model.parameters():
                    saved[prm] = prm.data.clone()
                    prm.data = optimizer.state[prm]["ax"].clone()
                for prm in model.parameters():
                    prm.data = saved[prm].clone()
        except KeyboardInterrupt:
            print("stopped early")
        """
    ).lstrip()
    lines = [line.strip() for line in fix_source(src).code.splitlines()]
    wrap = next(i for i, line in enumerate(lines) if line.startswith("model = DDP(model"))
    assert wrap < lines.index("try:")
