"""DDP003: rank/world_size/init_method passed to init_process_group under torchrun."""

from __future__ import annotations

from ..edits import without_kwarg
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import kwarg, string_value

DROPPED = ("rank", "world_size", "init_method")


class InitArgsMismatch(Rule):
    code = "DDP003"
    name = "init-args-mismatch"
    message = (
        "init_process_group gets rank/world_size/init_method by hand: under torchrun they come from the environment"
    )
    docs = """
## What
`init_process_group(..., rank=..., world_size=..., init_method="tcp://...")` in a script launched
by `torchrun` (no `mp.spawn`).

## Why
torchrun sets `RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT`; values given by hand disagree
as soon as the process count changes. A `world_size=4` under 2 processes, or every process passing
`rank=0`, waits until `DistStoreError: wait timeout after ...ms, keys: /default_pg/0//cpu//0/2`.

## Example
```python
dist.init_process_group("gloo", rank=args.rank, world_size=4)
```
becomes
```python
dist.init_process_group("gloo")
```

## Fix safety
Safe under torchrun (`env://`). Scripts that start their own processes with `mp.spawn` are left
alone (see DDP004).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if facts.launch.spawn_calls:
            return
        for call in facts.launch.init_calls:
            present = [name for name in DROPPED if kwarg(call, name) is not None]
            method = kwarg(call, "init_method")
            if method is not None and string_value(method.value) == "env://":
                present.remove("init_method")
            if not present:
                continue
            if ctx.report(
                kwarg(call, present[0]),
                f"init_process_group gets {', '.join(present)} by hand: under torchrun they come from the environment",
            ):

                def drop(node, names=tuple(present)):
                    for name in names:
                        node = without_kwarg(node, name)
                    return node

                ctx.plan.replace(call, drop)


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=2)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="torchrun's environment decides the rank, the process count and the rendezvous:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo", init_method="env://")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note='`init_method="env://"` is what torchrun provides:',
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def worker(rank, world_size):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world_size)
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
        note="A script that starts its own processes with `mp.spawn` must pass them:",
    ),
)
