"""DDP103: the DDP wrapper's forward run on rank 0 only (evaluation, sampling)."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes
from ..handles import raw_handles
from ..rule import Context, Rule
from ..syntax import calls_in, dotted


class Rank0ForwardThroughDdp(Rule):
    code = "DDP103"
    name = "rank0-forward-through-ddp"
    message = (
        "forward of the DDP wrapper on rank 0 only: DDP's forward can issue collectives the other ranks never join"
    )
    requires = ("DDP301",)
    reads = frozenset({"wraps"})
    docs = """
## What
`model(x)` (or `evaluate(model, ...)`, a helper of the script that calls it) inside an
`if rank == 0:` block, where `model` is the `DistributedDataParallel` wrapper.

## Why
DDP's forward broadcasts buffers (BatchNorm statistics) and, in training mode, prepares the gradient
reduction. Run on rank 0 alone it waits for the other ranks:
`gloo::EnforceNotMet ... Received data size doesn't match expected size. Is there a distributed
collective mismatch in your code?`, or a hang.

## Example
```python
if rank == 0:
    acc = evaluate(model, val_loader)
```
becomes
```python
if rank == 0:
    acc = evaluate(raw_model, val_loader)
```

## Fix safety
Safe: the unwrapped module computes the same outputs without collectives.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        raws = raw_handles(ctx)
        if not raws:
            return
        for node in ranks.rank_ifs():
            take0, take_n = ranks.takes(node.test)
            if take_n is not False:
                continue
            for call in calls_in(node.body):
                hits = []
                if dotted(call.func) in raws:
                    hits.append(call.func)
                callee = facts.index.callee_of(call)
                if callee is not None:
                    hits += [a.value for a in call.args if dotted(a.value) in raws]
                for handle in hits:
                    raw = raws[dotted(handle)]
                    if ctx.report(handle, f"`{dotted(handle)}` is the DDP wrapper: on rank 0 alone use `{raw}`"):
                        ctx.plan.replace(handle, lambda n, raw=raw: cst.parse_expression(raw))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    print(model(torch.randn(8, 4)).mean().item())
        dist.destroy_process_group()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    print(net(torch.randn(8, 4)).mean().item())
        dist.destroy_process_group()
        """,
        note="On rank 0 alone, the forward goes through the plain module:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                check = model(torch.randn(8, 4)).mean().item()
            if dist.get_rank() == 0:
                print(check)
        dist.destroy_process_group()
        """,
        note="Every rank runs the forward; only rank 0 prints:",
    ),
)
