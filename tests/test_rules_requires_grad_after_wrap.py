"""DDP312: which parameters need a gradient changes after the DDP wrap. DDP averages the gradients of
the parameters that needed one when it was built: a backbone unfrozen later trains unsynchronised on
every rank (checked on 2 ranks by golden staged_unfreeze: verify's `params` check fails), one frozen
later stops the next step. A switch made and undone around each step (a GAN's discriminator) is not
reported."""

from __future__ import annotations

import textwrap

from ddpfix import check_source, fix_source

DDP_SCRIPT = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def set_trainable(module, flag):
    for p in module.parameters():
        p.requires_grad = flag


dist.init_process_group("gloo")
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    {change}
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""


def found(change: str) -> list[tuple[int, str, str]]:
    src = textwrap.dedent(DDP_SCRIPT).format(change=change)
    return [(d.line, d.fix, d.message.split(":")[0]) for d in check_source(src) if d.code == "DDP312"]


def test_an_unfreeze_after_the_wrap_is_reported_without_a_fix():
    change = "if epoch == 2:\n        for p in model.module[0].parameters():\n            p.requires_grad = True"
    assert found(change) == [(19, "none", "unfreezes parameters of model after the DDP wrap")]


def test_a_freeze_after_the_wrap_through_a_method_or_a_function_of_the_script():
    assert found("if epoch == 2:\n        model.module[2].requires_grad_(False)") == [
        (19, "none", "freezes parameters of model after the DDP wrap")
    ]
    assert found("if epoch == 2:\n        set_trainable(model.module[0], True)") == [
        (19, "none", "unfreezes parameters of model after the DDP wrap")
    ]


def test_stages_chosen_by_a_condition_are_reported_both():
    change = "if epoch < 2:\n        set_trainable(net[0], False)\n    else:\n        set_trainable(net[0], True)"
    assert [f[2] for f in found(change)] == [
        "freezes parameters of model after the DDP wrap",
        "unfreezes parameters of model after the DDP wrap",
    ]


def test_a_switch_undone_in_the_same_step_is_not_reported():
    """A GAN freezes its discriminator for the generator's update and releases it for its own."""
    assert found("set_trainable(model, False)\n    set_trainable(model, True)") == []
    assert found("model.requires_grad_(False)\n    model.requires_grad_(True)") == []


def test_a_value_known_only_at_run_time_is_not_judged():
    assert found("set_trainable(model.module[0], epoch >= 2)") == []


SINGLE = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
for p in model[0].parameters():
    p.requires_grad = False
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    if epoch == 2:
        for p in model[0].parameters():
            p.requires_grad = True
    for x, y in loader:
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
"""


def test_a_single_gpu_script_is_converted_and_the_unfreeze_reported_as_incomplete():
    """The freeze where the model is built goes before the wrap this conversion adds; the release in
    the epoch loop cannot: the conversion says so, and `check` on its output says the same."""
    src = textwrap.dedent(SINGLE)
    line = src.splitlines().index("        for p in model[0].parameters():") + 1
    mine = [d for d in check_source(src) if d.code == "DDP312"]
    assert [(d.line, d.fix) for d in mine] == [(line, "none")]
    assert mine[0].message.startswith("after the DDP wrap, this unfreezes parameters of model:"), mine[0].message
    result = fix_source(src)
    assert result.code.index("p.requires_grad = False") < result.code.index("raw_model = model")
    assert [(b.line, b.code, b.invariant.number) for b in result.incomplete] == [(line, "DDP312", 1)]
    again = [d for d in check_source(result.code) if d.code == "DDP312"]
    assert len(again) == 1 and again[0].fix == "none"
