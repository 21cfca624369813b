"""DDP404: torch.load without map_location."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import kwarg, positional


class LoadWithoutMapLocation(Rule):
    code = "DDP404"
    distributed_only = True
    name = "load-without-map-location"
    message = "torch.load without map_location: every rank loads onto the device the checkpoint was saved from"
    docs = """
## What
`torch.load(path)` with no `map_location`. A load with one, including the tutorial's mapping
`map_location={"cuda:0": f"cuda:{rank}"}`, is left alone, and so is one in a branch that no rank
takes (`ckpt_path = None`, never rebound, then `if rank == 0 and ckpt_path is not None:`).

## Why
Tensors are restored to the device they were saved from (usually `cuda:0`), so every rank
allocates on GPU 0 before copying: memory spikes and imbalance there.

## Example
```python
model.load_state_dict(torch.load(args.resume))
```
becomes
```python
model.load_state_dict(torch.load(args.resume, map_location=device))
```
`device` when the script has a device variable in scope, else `"cpu"` (then `load_state_dict`
copies to the model's device).

## Fix safety
Safe.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.names.calls_to("torch.load"):
            if kwarg(call, "map_location") is not None or positional(call, 1) is not None:
                continue
            if facts.ranks.never_runs(call):  # `ckpt_path = None` ... `if rank == 0 and ckpt_path is not None:`
                continue
            if not ctx.report(call):
                continue
            dev = facts.models.device_var(call)
            value = cst.parse_expression(dev[0]) if dev is not None else cst.SimpleString('"cpu"')
            ctx.plan.replace(call, lambda n, v=value: with_kwarg(n, "map_location", v))


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda", LOCAL_RANK)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl")
        net = nn.Linear(4, 1).to(device)
        net.load_state_dict(torch.load("pretrained.pt"))
        model = DDP(net, device_ids=[LOCAL_RANK])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda", LOCAL_RANK)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl")
        net = nn.Linear(4, 1).to(device)
        net.load_state_dict(torch.load("pretrained.pt", map_location=device))
        model = DDP(net, device_ids=[LOCAL_RANK])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Each rank loads straight onto its own device:",
    ),
    fixes(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        model.load_state_dict(torch.load("pretrained.pt"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Without a device variable, onto the CPU (`load_state_dict` copies to the model's device):",
    ),
    clean(
        """
        import torch
        import torch.nn as nn

        model = nn.Linear(4, 1)
        model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="`map_location` given:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("nccl")
        net = nn.Linear(4, 1).to(LOCAL_RANK)
        ckpt_path = None
        if dist.get_rank() == 0 and ckpt_path is not None:
            net.load_state_dict(torch.load(ckpt_path))
        model = DDP(net, device_ids=[LOCAL_RANK])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=LOCAL_RANK)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A load in a branch no rank takes (`ckpt_path` is `None` and never rebound):",
    ),
)
