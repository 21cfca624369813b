"""DDP311: a model that sets its own parameters from its input in forward (data-dependent initialisation)."""

from __future__ import annotations

import ast
import os

import libcst as cst

from ..analysis.input_parameters import ast_builds, ast_input_parameters, built_parameters
from ..analysis.module_summary import ClassSummary
from ..diagnostic import NONE
from ..examples import clean, reports
from ..rule import Context, Rule
from ..syntax import dotted

# what makes the parameters equal again: a broadcast from one rank
SYNCS = ("broadcast", "broadcast_coalesced", "_broadcast_coalesced", "sync_params", "broadcast_parameters")


class ParametersFromInput(Rule):
    code = "DDP311"
    name = "parameters-from-input"
    message = (
        "sets its parameters from its input in forward: each rank takes them from its own batch after the "
        "wrap's broadcast, and the ranks train different models"
    )
    fix = NONE
    docs = """
## What
A model whose `forward` (or a method it calls on `self`) writes one of its own `nn.Parameter`s from
what it received: the data-dependent initialisation of ActNorm in Glow-like flows
(`self.loc.data.copy_(-mean)`, `self.scale.data.copy_(1 / std)` with `mean` and `std` taken from the
first batch), or any other in-place write of a parameter from the input. The class is followed from
the model the script builds down to the layer that does it, through the classes it builds and the
classes it derives from, in the script and in its own modules. A script that broadcasts parameters
itself (`dist.broadcast(p.data, 0)`) is not reported.

## Why
DDP makes the replicas equal once, when it wraps the model (a broadcast from rank 0), and from then
on keeps them equal only by averaging gradients. A parameter that each rank sets from its own shard
of the data after that moment differs between ranks, and nothing brings it back: every rank trains
its own model from then on, with averaged gradients that fit none of them. `python train.py` shows
nothing wrong, and under torchrun nothing fails either.

## Example
```python
class ActNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, channels))
        self.register_buffer("initialized", torch.tensor(0))

    def forward(self, x):
        if self.initialized.item() == 0:
            with torch.no_grad():
                self.loc.data.copy_(-x.mean(0, keepdim=True))  # this rank's batch
            self.initialized.fill_(1)
        return x + self.loc
```
After the forward that initialises them, make them equal on every rank:
```python
with torch.no_grad():
    model.module(first_batch)  # the data-dependent initialisation
for p in model.module.parameters():
    dist.broadcast(p.data, 0)
```
or run that first forward on the same batch on every rank before the wrap.

## Fix safety
No automatic fix: where the initialising forward runs (a first step, a dedicated warm-up pass, a
method of a trainer) and which batch it must see is the author's call. The finding names the class,
its parameters and the line that writes them, and a converted script that keeps it is reported
incomplete (`apply` exits 1).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not facts.models.trained:
            return
        calls = facts.index.calls
        if any((dotted(c.func) or "").split(".")[-1] in SYNCS for c in calls):
            return
        own = _script_classes(facts, calls)
        seen: set[tuple] = set()
        for call in calls:
            name = dotted(call.func)
            if name is None or facts.index.enclosing(call, cst.ClassDef) is not None:
                continue
            cls = own[name] if name in own else facts.modules.class_of(call.func)
            if cls is None or not cls.input_parameters:
                continue
            key = tuple(cls.input_parameters)
            if key in seen:
                continue
            seen.add(key)
            ctx.report(call, _message(cls, facts.path))


def _script_classes(facts, calls: list[cst.Call]) -> dict[str, ClassSummary]:
    """The script's own classes, read as a module summary reads them."""
    if not facts.index.classes:
        return {}
    tree = facts.index.ast_tree
    classes: dict[str, ClassSummary] = {}
    where = facts.path or "<script>"
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        cls = ClassSummary(node.name, [b.id for b in node.bases if isinstance(b, ast.Name)], builds=ast_builds(node))
        cls.input_parameters = [(node.name, p, where, line) for p, line in ast_input_parameters(node)]
        classes[node.name] = cls
    for c in calls:  # a layer of the script's modules that a class of the script builds
        if isinstance(c.func, cst.Name) and c.func.value not in classes:
            if (imported := facts.modules.class_of(c.func)) is not None:
                classes[c.func.value] = imported
    built_parameters(classes, [n.name for n in tree.body if isinstance(n, ast.ClassDef)])
    return classes


def _message(cls: ClassSummary, script: str | None) -> str:
    owner, _, path, line = cls.input_parameters[0]
    names = ", ".join(f"`{p}`" for c, p, _, _ in cls.input_parameters if c == owner)
    here = script is not None and os.path.abspath(path) == os.path.abspath(script)
    place = f"line {line}" if here or path == "<script>" else f"{_relative(path, script)}:{line}"
    return (
        f"`{owner}` sets its parameters {names} from its input in forward ({place}): under DDP each rank takes "
        "them from its own batch after the wrap's broadcast, and the ranks train different models; broadcast "
        "them from rank 0 after that forward"
    )


def _relative(path: str, script: str | None) -> str:
    if script is None:
        return os.path.basename(path)
    return os.path.relpath(path, os.path.dirname(os.path.abspath(script)))


ACTNORM = """
import torch
import torch.nn as nn


class ActNorm(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, channels))
        self.register_buffer("initialized", torch.tensor(0))

    def forward(self, x):
        if self.initialized.item() == 0:
            with torch.no_grad():
                self.loc.data.copy_(-x.mean(0, keepdim=True))
            self.initialized.fill_(1)
        return x + self.loc


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = ActNorm(4)
        self.head = nn.Linear(4, 1)

    def forward(self, x):
        return self.head(self.norm(x))
"""

EXAMPLES = (
    reports(
        ACTNORM
        + """

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        message=(
            "`ActNorm` sets its parameters `loc` from its input in forward (line 14): under DDP each rank takes them "
            "from its own batch after the wrap's broadcast, and the ranks train different models; broadcast them "
            "from rank 0 after that forward"
        ),
        note="`Net` builds an `ActNorm` that takes its offset from the first batch it sees:",
    ),
    clean(
        ACTNORM
        + """

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = Net()
with torch.no_grad():
    net(torch.randn(8, 4))
for p in net.parameters():
    dist.broadcast(p.data, 0)
model = DDP(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
""",
        note="Initialised on rank 0's values everywhere before the wrap:",
    ),
)
