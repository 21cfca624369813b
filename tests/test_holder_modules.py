"""A trained model reached only through a module that holds it (analysis/holders.py): the module whose
forward makes the loss is wrapped, after it is built and moved; the model stays the plain module for
everything else (an EMA copy, a state_dict read, the checkpoint)."""

from __future__ import annotations

import textwrap

from invariants import converted
from local_files import write

from ddpfix import fix_project, fix_source

CLASSES = """
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class Holder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return F.mse_loss(self.model(x), x)
"""
LOOP = """
torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
model = nn.Linear(4, 4)
ema_model = copy.deepcopy(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
{holders}
for (x,) in loader:
    loss = {step}
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    ema_model.load_state_dict(model.state_dict())
torch.save(model.state_dict(), "model.pt")
"""


def script(holders: str = "trainer = Holder(model).to(device)", step: str = "trainer(x.to(device))", extra="") -> str:
    return CLASSES + extra + LOOP.format(holders=holders, step=step)


def test_the_holder_is_wrapped_after_its_move_and_the_model_stays_plain():
    out = converted(script())
    assert "trainer = Holder(model).to(device)\nif DISTRIBUTED:\n    trainer = DDP(trainer" in out, out
    assert "DDP(model" not in out and "raw_model" not in out
    assert "ema_model = copy.deepcopy(model)\n" in out and 'torch.save(model.state_dict(), "model.pt")' in out
    assert out.index("trainer = DDP(trainer") < out.index("optimizer = torch.optim.SGD(model.parameters()")


def test_a_holder_run_only_without_gradients_is_not_the_one():
    """A sampler built from the model and run under no_grad beside the trainer: the trainer is wrapped."""
    holders = "trainer = Holder(model).to(device)\nsampler = Holder(model)"
    step = "trainer(x.to(device))\n    with torch.no_grad():\n        sampler(x)"
    out = fix_source(script(holders, step)).code
    assert "    trainer = DDP(trainer" in out and "DDP(sampler" not in out and "DDP(model" not in out, out


def test_a_model_the_loop_also_runs_itself_is_wrapped_as_before():
    out = fix_source(script(step="trainer(x.to(device)) + model(x).sum()")).code
    assert "    model = DDP(model" in out and "DDP(trainer" not in out, out


def test_two_holders_run_with_gradients_leave_the_model_wrapped_as_before():
    holders = "trainer = Holder(model).to(device)\nother = Holder(model)"
    out = fix_source(script(holders, "trainer(x) + other(x)")).code
    assert "    model = DDP(model" in out and "DDP(trainer" not in out, out


def test_a_model_handed_to_a_function_that_runs_it_is_wrapped_as_before():
    extra = "\n\ndef probe(net, x):\n    return net(x).sum()\n"
    out = fix_source(script(step="trainer(x) + probe(model, x)", extra=extra)).code
    assert "    model = DDP(model" in out and "DDP(trainer" not in out, out


def test_a_holder_that_is_no_module_is_not_wrapped():
    src = script().replace("class Holder(nn.Module):", "class Holder:").replace("super().__init__()\n", "")
    src = src.replace("trainer = Holder(model).to(device)", "trainer = Holder(model)")
    src = src.replace("    def forward(self, x):", "    def __call__(self, x):")
    out = fix_source(src).code
    assert "DDP(trainer" not in out and "    model = DDP(model" in out, out


def test_a_holder_class_of_the_scripts_module_is_wrapped(tmp_path):
    """pytorch-ddpm's shape: `from diffusion import GaussianDiffusionTrainer`, built from the model and
    moved in the training function."""
    write(
        tmp_path,
        "diffusion.py",
        textwrap.dedent(CLASSES.split("device =")[1].split("\n", 1)[1]).replace(
            "class Holder", "import torch.nn as nn\nimport torch.nn.functional as F\n\n\nclass Holder"
        ),
    )
    main = (
        script().replace(CLASSES.split("class Holder")[1], "").replace("class Holder", "from diffusion import Holder")
    )
    path = write(tmp_path, "train.py", main)
    result = fix_project(str(path))
    assert "trainer = Holder(model).to(device)\nif DISTRIBUTED:\n    trainer = DDP(trainer" in result.code, result.code
    assert "DDP(model" not in result.code and result.incomplete == []
