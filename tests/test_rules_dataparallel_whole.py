"""A trained model in nn.DataParallel in shapes DDP302's own model lookup does not name (a part of the
model, a wrapper bound to another name, a model a helper builds and returns): the conversion is made
whole or not at all. A wrapper bound to another name converts safely (the plain run keeps its
DataParallel); a part of the model or a model a helper builds only with `--unsafe-fixes`, and a safe
apply then never joins a process group or shards the data beside the DataParallel (each rank would
train its own copy)."""

from __future__ import annotations

import textwrap

import pytest
from local_files import write

from ddpfix import check_source, fix_project, fix_source

LOOP = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

{build}

loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
opt = torch.optim.SGD({trained}.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.mse_loss({trained}(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {{epoch}} loss {{loss.item():.4f}}")
"""

NET = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 8)
        self.head = nn.Linear(8, 1)

    def forward(self, x):
        return self.head(self.encoder(x))
"""

SHAPES = {
    "part of the model": (NET + "\nmodel = Net()\nmodel.encoder = nn.DataParallel(model.encoder)", "model"),
    "a wrapper bound to another name": (
        "model = nn.Linear(4, 1)\nwrapper = nn.DataParallel(model)\nif torch.cuda.is_available():\n"
        "    wrapper = wrapper.cuda()",
        "wrapper",
    ),
    "a wrapper rebound to the trained name": (
        "net = nn.Linear(4, 1)\nmodel = nn.DataParallel(net)\nmodel = model.to('cpu')",
        "model",
    ),
    "a model a helper builds": (
        "def set_model():\n    model = nn.Linear(4, 1)\n    if torch.cuda.device_count() > 1:\n"
        "        model = nn.DataParallel(model)\n    return model\n\n\nmodel, = (set_model(),)",
        "model",
    ),
}


def script(build: str, trained: str) -> str:
    return textwrap.dedent(LOOP).format(build=build, trained=trained)


WITHHELD = ["part of the model", "a model a helper builds"]  # no DDP302 fix keeps the plain run here
# the fix level of the process group and the sampler: that of the DDP302 fix they come with (none for a
# part of the model: not even --unsafe-fixes converts it)
LEVEL = {"part of the model": "none", "a model a helper builds": "unsafe"}
KEPT = ["a wrapper bound to another name", "a wrapper rebound to the trained name"]


@pytest.mark.parametrize("shape", WITHHELD)
def test_a_safe_apply_leaves_a_dataparallel_script_whole(shape):
    src = script(*SHAPES[shape])
    fixes = {d.code: d.fix for d in check_source(src) if d.code in ("DDP001", "DDP201")}
    assert fixes == {"DDP001": LEVEL[shape], "DDP201": LEVEL[shape]}, fixes
    result = fix_source(src)
    assert result.code == src, result.diff  # no process group, sampler or guard beside the DataParallel
    assert {b.code for b in result.incomplete} >= {"DDP001"}, [b.format() for b in result.incomplete]


def test_a_dataparallel_model_that_is_not_trained_leaves_the_conversion_to_the_rest():
    """A frozen feature extractor in DataParallel beside the trained model: the trained one gets the
    process group, the sampler and its DDP wrap as in any script."""
    src = script("features = nn.DataParallel(nn.Linear(4, 4)).eval()\nmodel = nn.Linear(4, 1)", "model")
    fixes = {d.code: d.fix for d in check_source(src) if d.code in ("DDP001", "DDP201", "DDP301")}
    assert fixes == {"DDP001": "safe", "DDP201": "safe", "DDP301": "safe"}, fixes
    assert "DistributedSampler(" in fix_source(src).code


def test_a_model_trained_by_an_optimizer_of_the_scripts_module_is_not_half_converted(tmp_path):
    """The optimizer comes from util.py (`set_optimizer(model)`): the analysis sees no trained model, and
    the DataParallel a helper of the script puts the model in decides."""
    write(
        tmp_path,
        "util.py",
        "import torch\n\n\ndef set_optimizer(model):\n    return torch.optim.SGD(model.parameters(), lr=0.1)\n",
    )
    src = script(SHAPES["a model a helper builds"][0], "model").replace(
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)", "opt = set_optimizer(model)"
    )
    path = write(tmp_path, "train.py", "from util import set_optimizer\n" + src)
    result = fix_project(str(path))
    assert result.code == path.read_text() and result.others == {}, result.full_diff
    assert {d.code: d.fix for d in result.diagnostics if d.code == "DDP001"} == {"DDP001": "unsafe"}


@pytest.mark.parametrize("shape", KEPT)
@pytest.mark.parametrize("unsafe", [False, True])
def test_a_rebound_dataparallel_model_is_wrapped_once_and_kept_for_the_plain_run(shape, unsafe):
    """DDP302 converts the DataParallel (safe: the plain run keeps it, `if not DISTRIBUTED:`); DDP301
    must not wrap the same model a second time (DDP of DDP, whose `raw_model` would be the first
    wrapper), and the conversion is whole: process group, sampler, nothing left incomplete."""
    src = script(*SHAPES[shape]).replace("loader = DataLoader", "torch.manual_seed(0)\nloader = DataLoader", 1)
    fixes = {d.code: d.fix for d in check_source(src) if d.code in ("DDP001", "DDP201", "DDP302")}
    assert fixes == {"DDP001": "safe", "DDP201": "safe", "DDP302": "safe"}, fixes
    result = fix_source(src, unsafe_fixes=unsafe)
    out, trained = result.code, SHAPES[shape][1]
    assert out.count(" = DDP(") == 1, out
    assert f"if not DISTRIBUTED:\n    {trained} = nn.DataParallel({trained})\n" in out, out
    assert "DistributedSampler(" in out and "init_process_group(" in out
    assert result.incomplete == [], [b.format() for b in result.incomplete]


def test_check_reports_through_a_kept_dataparallel_what_apply_fixes():
    """`check` plans no edits, yet what reads the model through the DDP wrap DDP302 makes (here the whole
    wrapper pickled in a dict, DDP402) is reported as `apply` fixes it."""
    src = script("model = nn.Linear(4, 1)\nmodel = nn.DataParallel(model)", "model").replace(
        "loader = DataLoader", "torch.manual_seed(0)\nloader = DataLoader", 1
    )
    src += "state = {'net': model, 'epoch': 2}\ntorch.save(state, 'ckpt.pt')\n"
    checked = [(d.code, d.line, d.fix) for d in check_source(src) if d.code == "DDP402"]
    result = fix_source(src)
    fixed = [(d.code, d.line, d.fix) for d in result.diagnostics if d.code == "DDP402"]
    assert checked == fixed and len(fixed) == 1, (checked, fixed)
    assert "state = {'net': raw_model, 'epoch': 2}" in result.code


def test_a_part_of_the_model_in_dataparallel_is_never_converted_alone():
    """`model.encoder = nn.DataParallel(model.encoder)` while the optimizer trains all of `model`: a DDP
    around the encoder alone would leave the head's gradients unsynchronised (each rank its own head),
    so even `--unsafe-fixes` reports the line with the edit to make instead of converting it."""
    src = script(*SHAPES["part of the model"])
    [d] = [d for d in check_source(src) if d.code == "DDP302"]
    assert d.fix == "none"
    assert d.message.endswith(
        "(around model.encoder, a part of model, which trains as a whole: under torchrun DDP must wrap model "
        "and leave model.encoder plain; convert it by hand)"
    )
    result = fix_source(src, unsafe_fixes=True)
    assert result.code == src, result.diff  # not half converted: no process group, sampler or guard either
    assert ("DDP302", 1) in [(b.code, b.invariant.number) for b in result.incomplete]
