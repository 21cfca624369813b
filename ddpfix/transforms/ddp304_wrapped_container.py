"""DDP304: DDP wraps a container built around the real model (`DDP(nn.Sequential(model))`)."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes, reports
from ..rule import Context, Rule
from ..syntax import assign_targets, dotted, kwarg, positional, walk

CONTAINERS = {
    "torch.nn.Sequential": "Sequential",
    "torch.nn.ModuleList": "ModuleList",
    "torch.nn.ModuleDict": "ModuleDict",
    "torch.nn.modules.container.Sequential": "Sequential",
    "torch.nn.modules.container.ModuleList": "ModuleList",
    "torch.nn.modules.container.ModuleDict": "ModuleDict",
}


class WrappedContainer(Rule):
    code = "DDP304"
    name = "wrapped-container"
    message = "DDP wraps a container built around the model: wrap the model itself"
    docs = """
## What
`DistributedDataParallel(nn.Sequential(model))`, `DDP(nn.ModuleList([model]))` or
`DDP(nn.ModuleDict({"net": model}))`: a one-element container made at wrap time.

## Why
The container adds nothing but a level of names: checkpoints saved through the wrapper get
`module.0.` keys that neither a plain run nor the unwrapped model can load (`Missing key(s) in
state_dict: "fc.weight" ... Unexpected key(s) in state_dict: "0.fc.weight"`). `ModuleList` and
`ModuleDict` have no `forward` at all, so the first training step raises `NotImplementedError:
Module [ModuleList] is missing the required "forward" function`.

## Example
```python
model = DDP(nn.Sequential(model), device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
```
becomes
```python
model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
```

## Fix safety
Safe: a one-element `Sequential` computes exactly its element's forward, and parameters are the
same objects. Not fixed (diagnostic only) when the script reaches into the container through the
wrapper (`model.module[0]`), and for `ModuleList`/`ModuleDict` of several models, which cannot run
a forward anyway. A `Sequential` of several modules is a real composite model and is left alone.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.models.ddp_calls:
            arg = positional(call, 0) or kwarg(call, "module")
            if arg is None or not isinstance(arg.value, cst.Call):
                continue
            kind = CONTAINERS.get(facts.names.call_qual(arg.value) or "")
            if kind is None:
                continue
            inner = _only_element(arg.value, kind)
            if inner is None:
                if kind != "Sequential":
                    ctx.report(
                        arg,
                        f"DDP wraps an nn.{kind}, which has no forward(): wrap the model that runs the forward",
                        fix="none",
                    )
                continue
            targets = assign_targets(facts.index.site(call).stmt)
            if targets and _reaches_into(facts, targets[0]):
                ctx.report(
                    arg,
                    f"DDP wraps an nn.{kind} around the model: wrap the model itself (and drop the [0] / ['key'] indexing)",
                    fix="none",
                )
                continue
            if ctx.report(
                arg,
                f"DDP wraps an nn.{kind} around the model: checkpoints get 'module.0.'-style keys; wrap the model itself",
            ):
                ctx.plan.replace(arg, lambda n, inner=inner: n.with_changes(value=inner))


def _only_element(call: cst.Call, kind: str) -> cst.BaseExpression | None:
    args = [a for a in call.args if a.keyword is None]
    if any(a.star for a in args) or len(call.args) != 1:
        return None
    value = args[0].value if args else None
    if kind == "Sequential":
        return value
    if kind == "ModuleList" and isinstance(value, (cst.List, cst.Tuple)) and len(value.elements) == 1:
        el = value.elements[0]
        return None if isinstance(el, cst.StarredElement) else el.value
    if (
        kind == "ModuleDict"
        and isinstance(value, cst.Dict)
        and len(value.elements) == 1
        and isinstance(value.elements[0], cst.DictElement)
    ):
        return value.elements[0].value
    return None


def _reaches_into(facts, handle: str) -> bool:
    """`model.module[0]`, `model.module.net`, `model.module.0`: code that relies on the container."""
    for node in walk(facts.module):
        if isinstance(node, cst.Subscript) and dotted(node.value) == f"{handle}.module":
            return True
        if (
            isinstance(node, cst.Attribute)
            and dotted(node.value) == f"{handle}.module"
            and node.attr.value
            not in (
                "state_dict",
                "load_state_dict",
                "parameters",
                "named_parameters",
                "train",
                "eval",
                "to",
            )
        ):
            return True
    return False


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Linear(4, 1)
        model = DDP(nn.Sequential(net))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Linear(4, 1)
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="The wrapper holds the model itself, so the checkpoint's keys are the model's own:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Linear(4, 1)
        model = DDP(nn.ModuleList([net, nn.Linear(4, 1)]))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message="DDP wraps an nn.ModuleList, which has no forward(): wrap the model that runs the forward",
        note="Reported without a fix: a ModuleList of several models has no forward for DDP to run:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A `Sequential` of several layers is the model itself:",
    ),
)
