"""DDP406: print on every rank."""

from __future__ import annotations

from ..edits import guard_site
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import dotted


class UnguardedPrint(Rule):
    code = "DDP406"
    name = "unguarded-print"
    message = "print runs on every rank: output is duplicated once per process"
    docs = """
## What
A `print(...)` statement that every rank runs. Left alone: prints under a rank-0 test (any the rank
detector knows: `if rank == 0:`, `if args.local_rank in [-1, 0]:`, `if is_main_process():`,
`if master_process:`, a name bound from one), after an early return on the other ranks, in a
function only called from such places, prints that name their rank (`print(f"[rank {rank}] ...")`),
and prints after the script replaced `builtins.print` on the other ranks
(`setup_for_distributed(is_master)`, in this file or in one of its own modules).

## Why
With N processes every line appears N times, interleaved, and per-rank values (a rank's own loss)
read as if they were global.

## Example
```python
print(f"epoch {epoch}: loss {loss.item():.4f}")
```
becomes
```python
if RANK == 0:
    print(f"epoch {epoch}: loss {loss.item():.4f}")
```
Inside a block the fix guards already (a `with open(...)` rank 0 writes), the print gets no guard of
its own.

## Fix safety
Safe: a plain run has RANK 0 and prints exactly as before. A script whose own rank variable a plain
run sets to -1 (`int(os.environ.get("RANK", -1))`) is guarded with `in (-1, 0)`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if "print" in facts.names.aliases:
            return  # `from rich import print` and friends: leave alone
        for call in facts.index.statement_calls(lambda c: dotted(c.func) == "print"):
            if any(facts.ranks.mentions_rank(a.value) for a in call.args):
                continue  # print(f"[rank {rank}] ...") reports per rank on purpose
            if facts.ranks.print_silenced(call):
                continue  # setup_for_distributed(is_master) replaced print on the other ranks
            guard_site(ctx, call)


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
            print(f"step {step}: loss {loss.item():.4f}")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        RANK = int(os.environ.get("RANK", 0))

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0:
                print(f"step {step}: loss {loss.item():.4f}")
        """,
        note="One copy of each line, from rank 0:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(f"[rank {rank}] final loss {loss.item():.4f}")
        """,
        note="A line that names its rank is meant to come from every rank:",
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
                print(f"step {step}: loss {loss.item():.4f}")
        """,
        note="Printed on rank 0 only:",
    ),
)
