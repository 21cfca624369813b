"""DDP311: a model that sets its own parameters from its input in forward (data-dependent initialisation)."""

from __future__ import annotations

import ast
import os

import libcst as cst

from ..analysis.ast_reading import ast_dotted
from ..analysis.input_parameters import built_parameters, read_input_parameters
from ..analysis.module_summary import ClassSummary
from ..diagnostic import NONE, SAFE
from ..examples import clean, fixes, reports
from ..module_functions import add_module_function
from ..order import Order
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
    fix = SAFE
    requires = ("DDP001",)
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
The fix adds, where the model is built, a hook that gives every rank rank 0's parameters once the
model's first forward has run (the initialising one), then removes itself:
```python
model = Net()
if DISTRIBUTED:
    broadcast_after_first_forward(model)  # ActNorm sets its parameters from each rank's first batch
```
`broadcast_after_first_forward` is a function of a few lines the fix adds to the script. After that
first step the replicas are equal again, and DDP's averaged gradients keep them so.

## Fix safety
Safe where every write is an initialisation behind a test (`if self.initialized.item() == 0:`) and
the model is bound to a name when it is built: `python train.py` runs no new code (the hook is
registered only under torchrun), and every rank runs its first forward at the same point of the
training loop, so every rank reaches the broadcast. A model that writes a parameter from its input
on every forward (no test), or one built inside an expression, is reported without a fix: whatever
makes it equal across ranks (an all-reduce of the statistics each step, or no write at all) is the
author's call. Where the first forward runs on one rank only (a rank-0 summary or export before
training), the broadcast would wait for the others: run that forward on every rank, or after the
first step.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not facts.models.trained:
            return
        calls = facts.index.calls
        own = _script_classes(facts, calls)
        found: list[tuple[cst.Call, ClassSummary]] = []
        for call in calls:
            name = dotted(call.func)
            cls = None if name is None else own[name] if name in own else facts.modules.class_of(call.func)
            if cls is None or not cls.input_parameters:
                continue
            outer = facts.index.enclosing(call, cst.ClassDef)
            if outer is not None and outer.name.value in own and own[outer.name.value].is_module:
                continue  # a layer a model class builds: reported where the model is built
            if all(cls.input_parameters != other.input_parameters for _, other in found):
                found.append((call, cls))
        if not found or any((dotted(c.func) or "").split(".")[-1] in SYNCS for c in calls):
            return
        helper: str | None = None
        for call, cls in found:
            stmt = facts.index.site(call).stmt
            bound = _bound_name(stmt, call)
            once = all(w.once for w in cls.input_parameters)
            if not ctx.report(call, _message(cls, facts.path), fix=None if once and bound and cls.is_module else NONE):
                continue
            if helper is None:
                helper = ctx.plan.fresh("broadcast_after_first_forward")
                code = HELPER.format(
                    fn=helper,
                    torch=ctx.plan.ref("torch", "torch", style="import"),
                    dist=ctx.plan.ref("torch.distributed", "dist", style="import"),
                )
                add_module_function(ctx, stmt, code, Order.PARAMETER_SYNC)
            owners = list(dict.fromkeys(w.cls for w in cls.input_parameters))
            stmts = ctx.plan.statements(
                """
                if {D}:
                    {fn}({m})  # {owners} {sets} from each rank's first batch
                """,
                D=ctx.env("DISTRIBUTED"),
                fn=helper,
                m=bound,
                owners=", ".join(owners),
                sets="sets its parameters" if len(owners) == 1 else "set their parameters",
            )
            ctx.plan.insert_after(stmt, stmts, order=Order.PARAMETER_SYNC)


HELPER = '''
def {fn}(module):
    """Once `module` has run its first forward, give every rank rank 0's parameters: layers that set their
    own from the first batch they see took them from each rank's own batch."""

    def broadcast(mod, args, output):
        hook.remove()
        with {torch}.no_grad():
            for p in mod.parameters():
                {dist}.broadcast(p.data, 0)

    hook = module.register_forward_hook(broadcast)
'''


def _bound_name(stmt: cst.CSTNode, call: cst.Call) -> str | None:
    """What `stmt` binds the module `call` builds to (`model = Flow(4)`, `self.model = nn.Sequential(...)`
    of it), if that is all it does."""
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1:
        target, value = small.targets[0].target, small.value
    elif isinstance(small, cst.AnnAssign) and small.value is not None:
        target, value = small.target, small.value
    else:
        return None
    holds = value is call or (
        isinstance(value, cst.Call)
        and (dotted(value.func) or "").endswith("Sequential")
        and any(a.value is call for a in value.args)
    )
    return dotted(target) if holds else None  # `model`, or `self.model` in a trainer's __init__


def _script_classes(facts, calls: list[cst.Call]) -> dict[str, ClassSummary]:
    """The script's own classes, read as a module summary reads them."""
    if not facts.index.classes:
        return {}
    tree = facts.index.ast_tree
    classes: dict[str, ClassSummary] = {}
    where = facts.path or "<script>"
    for node in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        bases = [ast_dotted(b) or "" for b in node.bases]
        classes[node.name] = read_input_parameters(ClassSummary(node.name, bases), node, where)
    for c in calls:  # a layer of the script's modules that a class of the script builds
        if isinstance(c.func, cst.Name) and c.func.value not in classes:
            if (imported := facts.modules.class_of(c.func)) is not None:
                classes[c.func.value] = imported
    built_parameters(classes, [n.name for n in tree.body if isinstance(n, ast.ClassDef)])
    return classes


def _message(cls: ClassSummary, script: str | None) -> str:
    first = cls.input_parameters[0]
    names = ", ".join(f"`{w.param}`" for w in cls.input_parameters if w.cls == first.cls)
    here = first.path == "<script>" or (script is not None and os.path.abspath(first.path) == os.path.abspath(script))
    place = f"line {first.line}" if here else f"{_relative(first.path, script)}:{first.line}"
    return (
        f"`{first.cls}` sets its parameters {names} from its input in forward ({place}): under DDP each rank "
        "takes them from its own batch after the wrap's broadcast, and the ranks train different models; "
        "broadcast them from rank 0 after that forward"
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

LOOP = """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""

SETUP = """

import os

import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1
if DISTRIBUTED:
    dist.init_process_group("gloo")
"""

EXAMPLES = (
    fixes(
        ACTNORM + SETUP + "model = Net()\nif DISTRIBUTED:\n    model = DDP(model)\n" + LOOP,
        ACTNORM
        + SETUP
        + "\n"
        + HELPER.format(fn="broadcast_after_first_forward", torch="torch", dist="dist")
        + """

model = Net()
if DISTRIBUTED:
    broadcast_after_first_forward(model)  # ActNorm sets its parameters from each rank's first batch
if DISTRIBUTED:
    model = DDP(model)
"""
        + LOOP,
        note="`Net` builds an `ActNorm` that takes its offset from the first batch each rank sees:",
    ),
    reports(
        ACTNORM.replace("if self.initialized.item() == 0:", "if self.training:  # renormalised on every batch")
        + "\n\nmodel = Net()\n"
        + LOOP,
        message=(
            "`ActNorm` sets its parameters `loc` from its input in forward (line 14): under DDP each rank takes them "
            "from its own batch after the wrap's broadcast, and the ranks train different models; broadcast them "
            "from rank 0 after that forward"
        ),
        note="Written on every forward, not once: no broadcast after the first step would keep the ranks equal:",
    ),
    clean(
        ACTNORM
        + SETUP
        + """net = Net()
with torch.no_grad():
    net(torch.randn(8, 4))
for p in net.parameters():
    dist.broadcast(p.data, 0)
model = DDP(net)
"""
        + LOOP,
        note="Initialised and made equal by the script itself before the wrap:",
    ),
)
