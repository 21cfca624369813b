"""DDP209 on training batches from an object no rule shards: a batch-iterator class or a method of
the script's own code that never builds a DataLoader (analysis/foreign_streams.py)."""

from __future__ import annotations

import pytest

from ddpfix import check_source, fix_project

UTILS = """
import torch


class Windows:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def get_batches(self, x, y, batch_size, shuffle):
        order = torch.randperm(len(x)) if shuffle else torch.arange(len(x))
        for start in range(0, len(x), batch_size):
            picked = order[start : start + batch_size]
            yield x[picked], y[picked]
"""

LOADERS = """
from torch.utils.data import DataLoader


class Batches:
    def __init__(self, dataset, batch_size):
        self.loader = DataLoader(dataset, batch_size=batch_size, shuffle=True)

    def __iter__(self):
        return iter(self.loader)
"""

SCRIPT = """
import torch
import torch.nn as nn

from utils import *


def train(data, x, y, model, optimizer, batch_size):
    for xb, yb in data.get_batches(x, y, batch_size, True):
        loss = nn.functional.mse_loss(model(xb), yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    data = Windows(x, y)
    model = nn.Linear(4, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(2):
        train(data, x, y, model, optimizer, 8)


if __name__ == "__main__":
    main()
"""


LOOP = "    for xb, yb in data.get_batches(x, y, batch_size, True):"


def ddp209(tmp_path, script, **modules):
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    (tmp_path / "train.py").write_text(script)
    result = fix_project(str(tmp_path / "train.py"))
    return [d for d in result.diagnostics if d.code == "DDP209"], result


def test_samples_a_method_takes_from_the_function_s_parameters_are_cut_by_rank_before_the_loop(tmp_path):
    """`data` is a parameter: the caller's `Windows(x, y)` (a star import of utils.py) builds it, and its
    get_batches() takes samples from `x` and `y` only (`len(x)`, `x[picked]`): each rank takes its own
    samples of both, as many on every rank, before the loop; `check` on the output is silent and a
    second run changes nothing."""
    seeded = SCRIPT.replace("    x, y = torch.randn", "    torch.manual_seed(0)\n    x, y = torch.randn")
    [d], result = ddp209(tmp_path, seeded, utils=UTILS)
    assert d.applied and d.line == seeded.splitlines().index(LOOP) + 1
    assert "Windows.get_batches() of utils.py" in d.message and "its own samples of x, y" in d.message
    assert not result.incomplete
    assert (
        "    if DISTRIBUTED:  # each rank its own samples, as many on every rank: the ranks take the same steps\n"
        "        x = x[RANK::WORLD_SIZE][: len(x) // WORLD_SIZE]\n"
        "        y = y[RANK::WORLD_SIZE][: len(y) // WORLD_SIZE]\n" + LOOP
    ) in result.code
    (tmp_path / "train.py").write_text(result.code)
    assert check_source(result.code, path=str(tmp_path / "train.py"), cross_file=True) == []
    assert fix_project(str(tmp_path / "train.py")).code == result.code


@pytest.mark.parametrize(
    ("old", "new", "file"),
    [
        ("yield x[picked], y[picked]", "yield x[picked].float(), y.float()[picked]", "utils"),  # y read another way
        ("yield x[picked], y[picked]", "yield x[picked, :2], y[picked]", "utils"),  # past the first dimension
        ("yield x[picked], y[picked]", "yield helper(x, picked), y[picked]", "utils"),  # x handed on
        ("yield x[picked], y[picked]", "yield x[picked], self.y[picked]", "utils"),  # other data, same index
        (LOOP, "    x = x * 2\n" + LOOP, "train"),  # bound again before the loop
        (LOOP, "    for _ in range(2):\n    " + LOOP, "train"),  # cut again on each pass of an outer loop
        ("        optimizer.step()\n", "        optimizer.step()\n    print(len(x))\n", "train"),  # whole x read after
    ],
)
def test_batches_the_cut_could_not_keep_aligned_or_even_are_reported_without_a_fix(tmp_path, old, new, file):
    utils, script = UTILS, SCRIPT
    if file == "utils":
        utils = utils.replace(old, new)
    else:
        body = script[script.index(LOOP) : script.index("\n\n\ndef main")]
        script = (
            script.replace(body, body.replace("\n    ", "\n        ")).replace(LOOP, new)
            if "range" in new
            else (script.replace(old, new))
        )
    [d], result = ddp209(tmp_path, script, utils=utils)
    assert d.fix == "none" and "no rule shards it" in d.message
    assert [b.code for b in result.incomplete if b.code == "DDP209"] == ["DDP209"]
    assert "init_process_group" in result.code  # the rest converts; the summary says what is missing


def test_a_loop_that_rebinds_the_names_is_cut_unless_the_function_reads_them_before_it(tmp_path):
    """`for x, y in data.get_batches(x, y, ...)` rebinds x and y: reads in the loop and after it are of
    the batch, cut or not; a read before the loop (`n = len(x)`) would count this rank's part once cut."""
    seeded = SCRIPT.replace("    x, y = torch.randn", "    torch.manual_seed(0)\n    x, y = torch.randn")
    rebinding = seeded.replace(LOOP, LOOP.replace("xb, yb", "x, y")).replace("model(xb), yb", "model(x), y")
    [d], result = ddp209(tmp_path, rebinding, utils=UTILS)
    assert d.applied and not result.incomplete
    counted = rebinding.replace(LOOP.replace("xb, yb", "x, y"), "    n = len(x)\n" + LOOP.replace("xb, yb", "x, y"))
    [d], result = ddp209(tmp_path, counted, utils=UTILS)
    assert d.fix == "none" and [b.code for b in result.incomplete] == ["DDP209"]


def test_script_class_cutting_batches_is_reported_and_one_built_over_a_loader_is_not(tmp_path):
    own = SCRIPT.replace("from utils import *\n", UTILS.replace("import torch\n", ""))
    [d], _ = ddp209(tmp_path, own)
    assert "(Windows.get_batches())" in d.message
    over_loader = (
        SCRIPT.replace("from utils import *", "from loaders import Batches")
        .replace("    for xb, yb in data.get_batches(x, y, batch_size, True):", "    for xb, yb in data:")
        .replace("    data = Windows(x, y)", "    data = Batches(torch.utils.data.TensorDataset(x, y), 8)")
    )
    found, _ = ddp209(tmp_path, over_loader, loaders=LOADERS)
    assert found == []  # its code builds a DataLoader: DDP201's to shard, not an unknown stream


def test_batches_cut_by_rank_are_not_reported(tmp_path):
    ranked = SCRIPT.replace(
        "        train(data, x, y, model, optimizer, 8)",
        "        train(data, x[RANK::2], y[RANK::2], model, optimizer, 8)",
    )
    ranked = ranked.replace("\n\ndef train", "\nRANK = int(os.environ.get('RANK', 0))\n\n\ndef train", 1)
    ranked = "import os\n" + ranked
    found, _ = ddp209(tmp_path, ranked, utils=UTILS)
    assert found == []
