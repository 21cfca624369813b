"""DDP312: which of the model's parameters need a gradient changes after the DDP wrap."""

from __future__ import annotations

import libcst as cst

from ..analysis.requires_grad import Change, changes
from ..diagnostic import NONE
from ..examples import clean, reports
from ..handles import once_wrapped, wrappers
from ..rule import Context, Rule

SCOPES = (cst.For, cst.While, cst.FunctionDef)


class RequiresGradAfterWrap(Rule):
    code = "DDP312"
    name = "requires-grad-after-wrap"
    message = "requires_grad changed after the DDP wrap: DDP synchronises the parameters that needed a gradient when it was built"
    fix = NONE
    reads = frozenset({"wraps"})
    docs = """
## What
A change of which parameters of a DDP-wrapped model need a gradient, made after the wrap: a backbone
unfrozen at some epoch (`if epoch == 5: for p in model.module.backbone.parameters(): p.requires_grad
= True`), a layer frozen mid-run (`model.fc.requires_grad_(False)`), or a function of the script
handed the model or a part of it that does so (`set_trainable(model.backbone, True)`). Also after a
wrap this conversion adds (DDP301), which goes after the changes made where the model is prepared,
but not after those inside the training loop or after a first training phase.

A switch made and undone around each step (a GAN's discriminator frozen for the generator's update
and unfrozen for its own, both in the same loop or function, neither under an `if`) is not reported:
the set of parameters DDP trains is the same at every step's end.

## Why
DDP records the parameters that need a gradient when it is built, and averages the gradients of
those alone. A parameter unfrozen later gets its gradient on each rank and is never averaged: every
rank updates it from its own batches and the copies drift apart, silently (the loss still falls).
A parameter frozen later never gives the gradient DDP waits for, and the next step raises
`RuntimeError: Expected to have finished reduction in the prior iteration`.

## Example
```python
model = DDP(model)
for epoch in range(10):
    if epoch == 5:
        for p in model.module.backbone.parameters():
            p.requires_grad = True  # from here on, each rank trains its own backbone
    train_one_epoch(model, loader, optimizer)
```
Wrap the model again after the change, from the plain module (its parameters are the same tensors,
so the optimizer keeps them): `model = DDP(model.module, device_ids=...)`; or keep every parameter
trainable from the start and leave the frozen ones out of the optimizer (or give them a zero
learning rate until they are released).

## Fix safety
No automatic fix: a second wrap is a collective every rank must reach at that point, and whether the
change runs on every rank at the same step, and where the script's other handles of the wrapper
live, is the author's to check. Only a literal `True`/`False` is judged; a value computed at run time
is not reported.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            found = [c for c in changes(facts, (handle, raw)) if facts.wraps.after_wrap(c.node, handle, wrap_stmt)]
            for change in _kept(facts, found):
                what = "unfreezes" if change.value else "freezes"
                effect = (
                    "DDP never averages their gradients, and each rank trains its own copy of them"
                    if change.value
                    else "DDP still waits for their gradients, and the next step raises 'Expected to have finished "
                    "reduction in the prior iteration'"
                )
                said = once_wrapped(
                    ctx,
                    handle,
                    f"{what} parameters of {handle} after the DDP wrap",
                    f"this {what} parameters of {handle}",
                )
                ctx.report(
                    change.node,
                    f"{said}: {effect}; make the change before the wrap, or wrap the model again after it",
                    fix=NONE,
                )


def _kept(facts, found: list[Change]) -> list[Change]:
    """The changes with a literal value that no opposite change undoes in the same step: those made
    unconditionally in one loop or function in both directions (a GAN's discriminator frozen for the
    generator's update) are a switch around each step, not a change of what is trained."""
    index = facts.index
    scope_of = {id(c.node): _scope(index, c.node) for c in found}
    switched: set[int] = set()
    for c in found:
        scope = scope_of[id(c.node)]
        if scope is None or c.value is None or _conditional(index, c.node, scope):
            continue
        if any(
            o.value is (not c.value) and scope_of[id(o.node)] is scope and not _conditional(index, o.node, scope)
            for o in found
        ):
            switched.add(id(scope))
    return [c for c in found if c.value is not None and id(scope_of[id(c.node)]) not in switched]


def _scope(index, node: cst.CSTNode) -> cst.CSTNode | None:
    return next((a for a in index.ancestors(node) if isinstance(a, SCOPES)), None)


def _conditional(index, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    for a in index.ancestors(node):
        if a is scope:
            return False
        if isinstance(a, (cst.If, cst.IfExp, cst.Try, cst.While)):
            return True
    return False


LOOP = """
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    {change}
    for step in range(3):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
"""
SETUP = """
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
for p in net[0].parameters():
    p.requires_grad = False
model = DDP(net)
"""

EXAMPLES = (
    reports(
        SETUP
        + LOOP.format(
            change="if epoch == 2:\n        for p in model.module[0].parameters():\n            p.requires_grad = True"
        ),
        message=(
            "unfreezes parameters of model after the DDP wrap: DDP never averages their gradients, and each rank "
            "trains its own copy of them; make the change before the wrap, or wrap the model again after it"
        ),
        note="The first layer, frozen when DDP was built, is released at epoch 2:",
    ),
    clean(
        SETUP.replace("model = DDP(net)", "model = DDP(net)\nD = DDP(nn.Linear(1, 1))")
        + LOOP.format(change="D.requires_grad_(False)\n    D.requires_grad_(True)"),
        note="Frozen and released in the same step, as a GAN does with its discriminator:",
    ),
)
