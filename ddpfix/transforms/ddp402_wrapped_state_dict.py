"""DDP402: saving the DDP wrapper's state_dict (keys get a `module.` prefix)."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes, reports
from ..handles import raw_handles
from ..rule import Context, Rule
from ..syntax import dotted, method_name, receiver


class WrappedStateDict(Rule):
    code = "DDP402"
    name = "wrapped-state-dict"
    message = "state_dict() of the DDP-wrapped model: keys get a 'module.' prefix; use the unwrapped model"
    requires = ("DDP301",)
    reads = frozenset({"wraps"})
    docs = """
## What
`model.state_dict()` where `model` is (or becomes) the `DistributedDataParallel` wrapper.

## Why
The wrapper's keys are `module.conv.weight`, ...; loading such a checkpoint into a plain model fails
with `Missing key(s) in state_dict: "conv.weight" ... Unexpected key(s) in state_dict: "module.conv.weight"`.

## Example
```python
torch.save(model.state_dict(), "checkpoint.pt")
```
becomes
```python
torch.save(raw_model.state_dict(), "checkpoint.pt")
```
(`raw_model` is the handle kept before wrapping; for a wrap the script already had, `model.module`.)

## Fix safety
Safe: the unwrapped model's keys are what a plain run saves.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        raws = raw_handles(ctx)
        wrap_at: dict[str, cst.CSTNode] = {}
        for model in facts.models.trained:
            existing = facts.models.wrapped(model)
            if model.handle in raws:
                wrap_at[model.handle] = (
                    facts.index.site(existing).stmt if existing is not None else facts.models.wrap_point(model).anchor
                )
        for call in facts.names.method_calls("state_dict"):
            handle = dotted(receiver(call)) if receiver(call) is not None else None
            if handle not in wrap_at or _inside_load(facts, call):
                continue
            raw = raws[handle]
            if facts.wraps.after_wrap(call, handle, wrap_at[handle]):
                if ctx.report(
                    call, f"{handle}.state_dict() saves the DDP wrapper ('module.' keys): use {raw}.state_dict()"
                ):
                    ctx.plan.replace(call.func, lambda n, raw=raw: n.with_changes(value=cst.parse_expression(raw)))
            elif _receives_wrapper(facts, call, handle, wrap_at[handle]):
                ctx.report(
                    call,
                    f"`{handle}` is the DDP wrapper here (passed in after the wrap): its state_dict() has 'module.' keys; "
                    f"save `{handle}.module.state_dict()` when distributed",
                    fix="none",
                )


def _receives_wrapper(facts, call: cst.CSTNode, handle: str, wrap_stmt: cst.CSTNode) -> bool:
    """`def train(model): torch.save(model.state_dict())` called with the wrapped model."""
    func = facts.index.enclosing(call, cst.FunctionDef)
    if not isinstance(func, cst.FunctionDef) or "." in handle:
        return False
    if handle not in [p.name.value for p in func.params.params]:
        return False
    callers = [c for c in facts.index.calls if facts.index.callee_of(c) is func]
    return any(
        facts.index.enclosing(c, cst.FunctionDef) is facts.index.enclosing(wrap_stmt, cst.FunctionDef)
        and facts.index.before(wrap_stmt, c)
        for c in callers
    )


def _inside_load(facts, call: cst.CSTNode) -> bool:
    return any(isinstance(a, cst.Call) and method_name(a) == "load_state_dict" for a in facts.index.ancestors(call))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.state_dict(), "model.pt")
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="The checkpoint holds the plain module's keys, which a plain run can load:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def save(net, path):
            torch.save(net.state_dict(), path)


        dist.init_process_group("gloo")
        net = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(10):
            loss = net(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            save(net, "model.pt")
        """,
        message=(
            "`net` is the DDP wrapper here (passed in after the wrap): its state_dict() has 'module.' keys; "
            "save `net.module.state_dict()` when distributed"
        ),
        note=(
            "Reported without a fix: the wrapper reaches `state_dict()` through a helper's parameter, and the "
            "helper may serve plain models too:"
        ),
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save({"model": model.module.state_dict(), "opt": opt.state_dict()}, "last.pt")
        """,
        note="The module's own keys, and the optimizer's state (which has no wrapper):",
    ),
)
