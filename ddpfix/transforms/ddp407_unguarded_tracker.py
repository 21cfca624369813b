"""DDP407: TensorBoard / W&B / MLflow trackers on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import TRACKER_CTORS, TRACKER_MODULES
from ..edits import guard_site
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import assign_targets, dotted, receiver


class UnguardedTracker(Rule):
    code = "DDP407"
    name = "unguarded-tracker"
    message = "experiment tracker created on every rank: one event file or run per process"
    docs = """
## What
`SummaryWriter(...)`, `wandb.init/log`, `mlflow.*` outside a rank-0 condition.

## Why
Every process creates its own event file / run and logs its own (partial) numbers: N runs in the
dashboard, or N interleaved curves in one.

## Example
```python
writer = SummaryWriter("runs/exp")
...
writer.add_scalar("loss", loss.item(), step)
```
becomes
```python
writer = SummaryWriter("runs/exp") if RANK == 0 else None
...
if RANK == 0:
    writer.add_scalar("loss", loss.item(), step)
```
The writer name stays bound on every rank (to `None` off rank 0), so passing it around keeps working;
every statement that uses it is guarded.

## Fix safety
Safe.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        writers: set[str] = set()
        for call in facts.names.calls_matching(
            lambda q: q in TRACKER_CTORS or q in {f"{m}.init" for m in TRACKER_MODULES}
        ):
            site = facts.index.site(call)
            targets = assign_targets(site.stmt)
            if targets and site.stmt.body[0].value is call and not facts.ranks.rank_guarded(call):  # type: ignore[attr-defined]
                writers.update(targets)
                if ctx.report(call):
                    cond = ctx.rank0(call)
                    ctx.plan.replace(
                        call,
                        lambda n, cond=cond: cst.IfExp(
                            test=cst.parse_expression(cond),
                            body=n,
                            orelse=cst.Name("None"),
                            whitespace_before_if=cst.SimpleWhitespace(" "),
                            whitespace_after_if=cst.SimpleWhitespace(" "),
                            whitespace_before_else=cst.SimpleWhitespace(" "),
                            whitespace_after_else=cst.SimpleWhitespace(" "),
                        ),
                    )
            elif not targets:
                guard_site(ctx, call)
        params = {w.split(".")[-1] for w in writers}

        def uses_tracker(call: cst.Call) -> bool:
            recv = receiver(call)
            name = dotted(recv) if recv is not None else None
            if name is None:
                return False
            if name in writers or name.split(".")[-1] in params:
                return True
            q = facts.names.qualname(recv) or ""
            return q in TRACKER_MODULES and dotted(call.func) not in {f"{m}.init" for m in TRACKER_MODULES}

        for call in facts.index.statement_calls(uses_tracker):
            guard_site(ctx, call, "tracker used on every rank: log from rank 0 only")


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        dist.init_process_group("gloo")
        writer = SummaryWriter("runs/exp")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.add_scalar("loss", loss.item(), step)
        writer.close()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        writer = SummaryWriter("runs/exp") if RANK == 0 else None
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0:
                writer.add_scalar("loss", loss.item(), step)
        if RANK == 0:
            writer.close()
        """,
        note="One event file, from rank 0; the name stays bound (to `None`) on the other ranks:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        writer = SummaryWriter("runs/exp") if rank == 0 else None
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if writer is not None:
                writer.add_scalar("loss", loss.item(), step)
        """,
        note="A writer on rank 0 only, used where it exists:",
    ),
)
