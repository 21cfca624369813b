"""DDP410: a file saved on rank 0 and read by every rank with no barrier in between."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes
from ..rule import Context, Order, Rule
from ..syntax import code_of, dotted, kwarg, positional


class SaveLoadRace(Rule):
    code = "DDP410"
    name = "save-load-race"
    message = "file saved on rank 0 and loaded by every rank without a barrier: the others can read it half-written"
    reads = frozenset({"hoisted"})
    docs = """
## What
`torch.save(obj, path)` on rank 0, then `torch.load(path)` on every rank, with no
`dist.barrier()` between them.

## Why
The other ranks reach the load while rank 0 is still writing: they read a missing or truncated
file (`PytorchStreamReader failed reading zip archive`), or an old checkpoint.

## Example
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
model.module.load_state_dict(torch.load(path, map_location=device))
```
becomes
```python
if rank == 0:
    torch.save(model.module.state_dict(), path)
if DISTRIBUTED:
    dist.barrier()
model.module.load_state_dict(torch.load(path, map_location=device))
```

## Fix safety
Safe: every rank reaches the barrier (it is outside any rank condition).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        # Saves on rank 0: guarded already, or about to be (DDP401 guards every save of a script
        # that runs distributed, or that trains and so gets a process group from DDP001; an unguarded
        # save races the same way, with every rank writing).
        distributed = bool(
            facts.launch.init_calls or facts.models.ddp_calls or facts.models.trained or facts.training.trains
        )
        saves = []
        for call in facts.names.calls_to("torch.save"):
            path = positional(call, 1) or kwarg(call, "f")
            if path is not None and (facts.ranks.rank_guarded(call) or distributed):
                saves.append((call, code_of(path.value)))
        if not saves:
            return
        hoisted = ctx.plan.hoisted
        barriers = [
            c
            for c, op in ranks.collectives_in(facts.module)
            if op in ("barrier", "monitored_barrier")
            and (not facts.ranks.rank_guarded(c) or any(c is h for h in hoisted))
        ]
        for load in facts.names.calls_to("torch.load"):
            path = positional(load, 0) or kwarg(load, "f")
            if path is None or facts.ranks.rank_guarded(load) or _inside_print(facts, load):
                continue
            for save, text in saves:
                if text != code_of(path.value) or not facts.index.before(save, load):
                    continue
                if facts.index.scope_of(save) is not facts.index.scope_of(load):
                    continue
                if any(facts.index.before(save, b) and facts.index.before(b, load) for b in barriers):
                    continue
                if ctx.report(load):
                    dist = ctx.plan.ref("torch.distributed", "dist", style="import")
                    stmts = ctx.plan.statements("if {D}:\n    {dist}.barrier()", D=ctx.env("DISTRIBUTED"), dist=dist)
                    ctx.plan.insert_before(facts.index.site(load).stmt, stmts, order=Order.BARRIER)
                break


def _inside_print(facts, node) -> bool:
    """`print(torch.load(p))`: the print (and so the load) goes to rank 0 only (DDP406)."""
    return any(isinstance(a, cst.Call) and dotted(a.func) == "print" for a in facts.index.ancestors(node))


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
            torch.save(model.module.state_dict(), "model.pt")
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

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
        if DISTRIBUTED:
            dist.barrier()
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        note="The other ranks wait until rank 0 has written the file:",
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
            torch.save(model.module.state_dict(), "model.pt")
        dist.barrier()
        model.module.load_state_dict(torch.load("model.pt", map_location="cpu"))
        """,
        note="A barrier between the write and the reads:",
    ),
)
