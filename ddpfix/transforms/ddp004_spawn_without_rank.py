"""DDP004: an mp.spawn target that does not take the process index first."""

from __future__ import annotations

import re

import libcst as cst

from ..examples import clean, reports
from ..rule import NONE, Context, Rule
from ..syntax import dotted, kwarg, positional

RANKISH = re.compile(r"rank|gpu|proc|idx|index|^i$|^pid$|device|local", re.IGNORECASE)


class SpawnWithoutRank(Rule):
    code = "DDP004"
    name = "spawn-without-rank"
    message = "mp.spawn calls fn(i, *args): the target's first parameter must be the process index"
    fix = NONE
    docs = """
## What
`mp.spawn(fn, args=(...), nprocs=n)` where `fn` does not take the process index as its first
parameter, or cannot take `1 + len(args)` positional arguments (fewer parameters, and no `*args`;
or more parameters without defaults).

## Why
`mp.spawn` calls `fn(i, *args)`. A target without the index fails at start with
`TypeError: main() takes 1 positional argument but 2 were given`; a target whose first parameter
is something else silently receives the index there (a swapped world size and rank).

## Example
```python
def main(world_size, rank): ...
mp.spawn(main, args=(world_size,), nprocs=world_size)
```
should be
```python
def main(rank, world_size): ...
```
or, better, drop `mp.spawn` and launch with `torchrun --nproc_per_node=N train.py`, reading
`RANK`/`LOCAL_RANK`/`WORLD_SIZE` from the environment.

## Fix safety
None (converting to torchrun restructures the launch).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.launch.spawn_calls:
            target = positional(call, 0) or kwarg(call, "fn")
            name = dotted(target.value) if target is not None else None
            func = facts.index.func_by_name.get(name or "")
            if func is None:
                continue
            positional_params = [*func.params.posonly_params, *func.params.params]
            params = [p.name.value for p in positional_params]
            args = kwarg(call, "args")
            n_args = (
                len(args.value.elements)
                if args is not None and isinstance(args.value, cst.Tuple) and not _starred(args.value)
                else (0 if args is None else None)
            )
            required = sum(1 for p in positional_params if p.default is None)
            takes_rest = isinstance(func.params.star_arg, cst.Param)  # `*args` (a bare `*` takes nothing)
            if n_args is not None and (n_args + 1 < required or (n_args + 1 > len(params) and not takes_rest)):
                takes = str(len(params)) if required == len(params) else f"{required} to {len(params)}"
                ctx.report(
                    call,
                    f"mp.spawn calls {name}(i, *args) with {n_args + 1} argument(s) but {name} takes {takes}; "
                    f"make the process index its first parameter (or launch with torchrun)",
                )
            elif params and not RANKISH.search(params[0]):
                ctx.report(
                    call,
                    f"mp.spawn passes the process index as {name}'s first argument, here `{params[0]}`; "
                    f"make the rank the first parameter (or launch with torchrun)",
                )


def _starred(args: cst.Tuple) -> bool:
    """`args=(*rest,)`: how many arguments it holds cannot be told."""
    return any(isinstance(el, cst.StarredElement) for el in args.elements)


EXAMPLES = (
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def worker(world_size, rank):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world_size)
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
        message=(
            "mp.spawn passes the process index as worker's first argument, here `world_size`; make the rank "
            "the first parameter (or launch with torchrun)"
        ),
        note="`mp.spawn` calls `worker(i, 2)`: the process index lands in `world_size`, the world size in `rank`:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def worker(rank):
            dist.init_process_group("gloo", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=2)
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
        message=(
            "mp.spawn calls worker(i, *args) with 2 argument(s) but worker takes 1; make the process index its "
            "first parameter (or launch with torchrun)"
        ),
        note="`mp.spawn` calls `worker(i, 2)`, one argument more than `worker` takes: a TypeError at start:",
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


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
        note="The index first, then `args`:",
    ),
)
