"""DDP003: rank/world_size/init_method passed to init_process_group under torchrun."""

from __future__ import annotations

from ..analysis.summaries import INIT_ARGS
from ..edits import without_kwarg
from ..examples import clean, fixes
from ..rule import NONE, Context, Rule
from ..syntax import dotted, kwarg, string_value

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
Safe under torchrun (`env://`). Scripts that start their own processes with `mp.spawn` (see
DDP004) or one `multiprocessing.Process(target=...)` each are left alone. Values a script with its own launch path takes from its own options
(`rank=args.rank, world_size=args.world_size, init_method=args.dist_url` with `--rank`,
`--world-size`, `--dist-url`) are its launch contract: reported, not removed. A helper of the
script's own modules that passes literal values is reported where the script calls it, naming the
file and line to change; no fix in another file.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if facts.launch.spawn_calls or facts.launch.process_starts:
            return  # the script starts its own workers: the values it passes are its launch contract
        for call in facts.launch.helper_joins:
            for found in facts.modules.findings(call, INIT_ARGS):
                ctx.report(
                    call,
                    f"{dotted(call.func)}() passes {found.detail} to init_process_group by hand "
                    f"({found.path.name}:{found.line}): under torchrun they come from the environment; drop them there",
                    fix=NONE,
                )
        for call in facts.launch.init_calls:
            present = [name for name in DROPPED if kwarg(call, name) is not None]
            method = kwarg(call, "init_method")
            if method is not None and string_value(method.value) == "env://":
                present.remove("init_method")
            if not present:
                continue
            args = ", ".join(present)
            first = kwarg(call, present[0])
            options = [o for name in present if (o := facts.launch.options.of(kwarg(call, name).value)) is not None]
            if options and facts.launch.own_path is not None:
                flags = ", ".join(o.flags[0] for o in options)
                ctx.report(
                    first,
                    f"init_process_group gets {args} from the script's own options ({flags}), which torchrun does not "
                    "set: launch the script the way it expects, or read RANK/WORLD_SIZE from the environment by hand",
                    fix=NONE,
                )
                continue
            if ctx.report(
                first, f"init_process_group gets {args} by hand: under torchrun they come from the environment"
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
