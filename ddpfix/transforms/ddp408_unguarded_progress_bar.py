"""DDP408: tqdm progress bars on every rank."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import kwarg


class UnguardedProgressBar(Rule):
    code = "DDP408"
    distributed_only = True
    name = "unguarded-progress-bar"
    message = "tqdm progress bar on every rank: N bars overwrite each other"
    docs = """
## What
A `tqdm(...)` progress bar with no `disable=` argument, outside code only some ranks run.

## Why
Every process draws its own bar on the same terminal: N bars fighting over one line, and log
files full of carriage returns.

## Example
```python
for x, y in tqdm(train_loader):
```
becomes
```python
for x, y in tqdm(train_loader, disable=RANK != 0):
```

## Fix safety
Safe: the loop still iterates on every rank; only the drawing is limited to rank 0. A plain run
has RANK 0 and draws the bar as before (a script rank variable a plain run sets to -1 gets
`not in (-1, 0)`).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.names.calls_matching(
            lambda q: (
                q
                in (
                    "tqdm.tqdm",
                    "tqdm.auto.tqdm",
                    "tqdm.notebook.tqdm",
                    "tqdm.std.tqdm",
                    "tqdm.tqdm.tqdm",
                    "tqdm.autonotebook.tqdm",
                )
                or q == "tqdm.trange"
                or q.endswith(".trange")
                and q.startswith("tqdm")
            )
        ):
            if kwarg(call, "disable") is not None or facts.ranks.rank_guarded(call):
                continue
            if ctx.report(call):
                expr = cst.parse_expression(ctx.not_rank0(call))
                ctx.plan.replace(call, lambda n, e=expr: with_kwarg(n, "disable", e))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from tqdm import tqdm

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in tqdm(range(10)):
            loss = model(torch.randn(8, 4)).pow(2).mean()
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
        from tqdm import tqdm

        RANK = int(os.environ.get("RANK", 0))

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in tqdm(range(10), disable=RANK != 0):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Every rank still iterates; only rank 0 draws:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from tqdm import tqdm

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in tqdm(range(10), disable=dist.get_rank() != 0):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A bar already limited to rank 0:",
    ),
)
