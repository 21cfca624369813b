"""Batches drawn through a generator of the script (`def sample_data(): ... yield next(loader)`, then
`batches = iter(sample_data(...))` and `next(batches)` in the training loop), and batches drawn with
next() from an iterator made again when it runs out: the loader is a training loader (DDP201 shards
it), and each pass over it is an epoch (DDP204 counts the passes and sets the sampler's epoch)."""

from __future__ import annotations

import re
import textwrap

from ddpfix import check_source, fix_source

GENERATOR = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def sample_data(dataset):
    {body}


def main():
    dataset = TensorDataset(torch.randn(32, 4), torch.randn(32, 1))
    model = nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    {consume}
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""

PASSES = """loader = DataLoader(dataset, shuffle=True, batch_size=4)
    loader = iter(loader)
    while True:
        try:
            yield next(loader)
        except StopIteration:
            loader = DataLoader(dataset, shuffle=True, batch_size=4)
            loader = iter(loader)
            yield next(loader)"""


CYCLE = """loader = DataLoader(dataset, shuffle=True, batch_size=4)
    while True:
        for batch in loader:
            yield batch"""

DRAWN = "batches = iter(sample_data(dataset))\n    for step in range(20):\n        x, y = next(batches)"
ITERATED = "for step, (x, y) in enumerate(sample_data(dataset)):"


def script(body: str, consume: str) -> str:
    return textwrap.dedent(GENERATOR).lstrip().replace("{body}", body).replace("{consume}", consume)


def codes(src: str) -> dict[str, list]:
    out: dict[str, list] = {}
    for d in check_source(src):
        out.setdefault(d.code, []).append(d)
    return out


def test_a_loader_a_generator_draws_from_is_sharded():
    for body, consume in ((PASSES, DRAWN), (CYCLE, DRAWN), (CYCLE, ITERATED)):
        src = script(body, consume)
        found = codes(src)
        assert [d.fix for d in found["DDP201"]] == ["safe"] * body.count("DataLoader("), (body, consume)
        out = fix_source(src).code
        assert out.count("DistributedSampler(dataset) if DISTRIBUTED else None") == body.count("DataLoader(")


def test_a_generator_nothing_trains_on_is_left_alone():
    src = script(
        CYCLE,
        "for step, (x, y) in enumerate(sample_data(dataset)):\n        break\n    for x, y in [(torch.ones(2, 4), torch.ones(2, 1))]:",
    )
    assert "DDP201" not in codes(src)


def test_each_pass_of_a_remade_iterator_sets_the_epoch():
    """DDP201 counts the passes with the sampler it adds; DDP204 does the same for a sampler the script
    built itself without the count."""
    out = fix_source(script(PASSES, DRAWN)).code
    assert "DDP204" not in codes(out)
    lines = [line.strip() for line in out.splitlines()]
    first, again = lines.index("epoch = 0"), lines.index("epoch += 1")
    assert lines[first + 2] == "loader.sampler.set_epoch(epoch)" and lines[first + 3] == "loader = iter(loader)"
    assert lines[again + 2] == "loader.sampler.set_epoch(epoch)" and lines[again + 3] == "loader = iter(loader)"
    uncounted = re.sub(r"\n *epoch (= 0|\+= 1)\n.*\n.*set_epoch\(epoch\)", "", out)
    assert "set_epoch" not in uncounted and "sampler=sampler" in uncounted
    [d] = codes(uncounted)["DDP204"]
    assert d.fix == "safe" and "each pass over the loader is an epoch" in d.message
    assert fix_source(uncounted).code == out


def test_passes_it_cannot_count_are_reported():
    """An iterator first made under an `if`, not in the function's own body: no count to start."""
    body = PASSES.replace("    loader = iter(loader)\n", "    if len(dataset) > 0:\n        loader = iter(loader)\n", 1)
    src = fix_source(script(body, DRAWN)).code
    assert "DistributedSampler(dataset)" in src and "set_epoch" not in src
    [d] = codes(src)["DDP204"]
    assert d.fix == "none" and "with a count of the passes" in d.message


def test_one_pass_needs_no_epoch():
    body = "loader = DataLoader(dataset, shuffle=True, batch_size=4)\n    it = iter(loader)\n    while True:\n        yield next(it)"
    out = fix_source(script(body, DRAWN)).code
    assert "DistributedSampler(dataset)" in out and "set_epoch" not in out
    assert "DDP204" not in codes(out)
