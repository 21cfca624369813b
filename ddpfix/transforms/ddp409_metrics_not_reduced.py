"""DDP409: a per-rank loss or accuracy logged as if it were global."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, reports
from ..rule import NONE, Context, Rule
from ..syntax import dotted, kwarg, walk


class MetricsNotReduced(Rule):
    code = "DDP409"
    name = "metrics-not-reduced"
    message = "metric printed on rank 0 covers rank 0's shard only: all-reduce it first"
    fix = NONE
    docs = """
## What
In a DDP script that shards its data, a loss or accuracy printed or logged from rank 0 with no
`all_reduce` anywhere in the script.

## Why
With a `DistributedSampler` each rank sees 1/N of the data; rank 0's running loss or accuracy is
computed over its shard alone, so the number in the log is not the number the single-process run
reports.

## Example
```python
if rank == 0:
    print(f"val acc {correct / total:.3f}")
```
becomes
```python
stats = torch.tensor([correct, total], device=device, dtype=torch.float64)
dist.all_reduce(stats)
if rank == 0:
    print(f"val acc {stats[0] / stats[1]:.3f}")
```

## Fix safety
None: which values are sums and which are means is the script's business.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not (facts.launch.init_calls and facts.data.sampler_calls):
            return
        ranks = facts.ranks
        if any(
            op in ("all_reduce", "reduce", "all_gather", "all_gather_object", "gather", "gather_object")
            for _, op in ranks.collectives_in(facts.module)
        ):
            return
        sharded = _sharded_totals(facts)
        if not sharded:
            return
        for call in facts.index.calls:
            name = dotted(call.func) or ""
            if name != "print" and not name.endswith((".info", ".log", ".add_scalar")):
                continue
            if not facts.ranks.rank_guarded(call):
                continue
            used = {n.value for n in walk(call) if isinstance(n, cst.Name)} & sharded
            if used:
                ctx.report(
                    call,
                    f"{', '.join(sorted(used))} summed over this rank's shard only, logged as if global: all-reduce it first",
                )


def _sharded_totals(facts) -> set[str]:
    """Names accumulated (`total += ...`) inside a loop over a loader whose sampler shards the data."""
    out: set[str] = set()
    for loader in facts.data.loaders:
        sampler = kwarg(loader.site.node, "sampler")
        if sampler is None or loader.target is None:
            continue
        for loop in facts.index.loops:
            if isinstance(loop, cst.For) and facts.data.iterates(loop, loader):
                for n in walk(loop.body):
                    if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name):
                        out.add(n.target.value)
    return out


EXAMPLES = (
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if dist.get_rank() == 0:
            print(f"mean loss {total / len(loader):.4f}")
        """,
        message="total summed over this rank's shard only, logged as if global: all-reduce it first",
        note="Rank 0's loss over its own shard, printed as the run's:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        total = torch.zeros(())
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)
        if dist.get_rank() == 0:
            print(f"mean loss {total.item() / (len(loader) * dist.get_world_size()):.4f}")
        """,
        note="Summed over every rank before rank 0 prints it:",
    ),
)
