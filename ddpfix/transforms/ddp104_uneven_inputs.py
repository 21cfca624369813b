"""DDP104: hand-sharded data or an IterableDataset without Join: ranks run different step counts."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, reports
from ..rule import NONE, Context, Rule
from ..syntax import code_of, dotted, kwarg, positional, walk


class UnevenInputs(Rule):
    code = "DDP104"
    name = "uneven-inputs"
    message = "ranks may get different numbers of batches: the ones that finish first leave the others hanging"
    fix = NONE
    docs = """
## What
Training data sharded by hand (`data[rank::world_size]`, `Subset(ds, range(rank, n, world))`) or an
`IterableDataset` in a DDP script, with no `DistributedSampler` and no `Join` context.

## Why
When one rank runs out of batches first, the others block in their next gradient all-reduce:
a hang, or `Connection closed by peer` once the finished rank exits. `DistributedSampler` pads every
rank to the same length; `torch.distributed.algorithms.Join` lets ranks that finish early shadow
the collectives of the others.

## Example
```python
shard = Subset(dataset, range(rank, len(dataset), world_size))
```
becomes
```python
sampler = DistributedSampler(dataset)
loader = DataLoader(dataset, sampler=sampler, ...)
```
or, for an IterableDataset, the loop runs under `with Join([model]):`. A shard cut by hand can also
be made the same length on every rank (`data[rank::world_size][: len(data) // world_size]`), which
leaves out up to `world_size - 1` samples: DDP209 does that for batches cut by hand in a single-GPU
script.

## Fix safety
None: which one fits depends on the data pipeline.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not (facts.models.ddp_calls or facts.launch.init_calls):
            return
        if any(dotted(c.func) and (dotted(c.func) or "").endswith("Join") for c in facts.index.calls):
            return
        ranks = facts.ranks
        for node in _subscripts(facts):
            ctx.report(
                node,
                "data sharded by hand with the rank: shard sizes can differ; use a DistributedSampler or Join, "
                "or cut every shard to the same length",
            )
        for call in facts.index.calls:
            if (dotted(call.func) or "").split(".")[-1] == "Subset":
                idx = positional(call, 1) or kwarg(call, "indices")
                if idx is not None and ranks.depends_on_rank(idx.value):
                    ctx.report(
                        call,
                        "Subset built from the rank: shard sizes can differ; use a DistributedSampler or Join, "
                        "or cut every shard to the same length",
                    )
        for loader, _ in facts.data.training_loaders:
            ds = positional(loader.site.node, 0) or kwarg(loader.site.node, "dataset")  # type: ignore[arg-type]
            if ds is not None and _is_iterable(facts, ds.value):
                ctx.report(
                    loader.site.node,
                    "training loader over an IterableDataset: ranks may get different numbers of batches; wrap the loop in Join",
                )


def _subscripts(facts):
    seen = set()
    ranks = facts.ranks
    for assign in facts.index.assigns:
        even = {id(n.value) for n in walk(assign.value) if _cut_even(n)}
        for n in walk(assign.value):
            if type(n) is cst.Subscript and len(n.slice) == 1 and type(n.slice[0].slice) is cst.Slice:
                sl = n.slice[0].slice
                if (
                    sl.lower is not None
                    and sl.step is not None
                    and ranks.depends_on_rank(sl.lower)
                    and id(n) not in seen
                    and id(n) not in even
                ):
                    seen.add(id(n))
                    yield n


def _cut_even(node: cst.CSTNode) -> bool:
    """`<shard>[: len(data) // world_size]`: a shard cut to one length on every rank."""
    if not (type(node) is cst.Subscript and type(node.value) is cst.Subscript and len(node.slice) == 1):
        return False
    sl = node.slice[0].slice
    upper = sl.upper if type(sl) is cst.Slice and sl.lower is None and sl.step is None else None
    return (
        isinstance(upper, cst.BinaryOperation)
        and isinstance(upper.operator, cst.FloorDivide)
        and isinstance(upper.left, cst.Call)
        and dotted(upper.left.func) == "len"
    )


def _is_iterable(facts, expr) -> bool:
    name = dotted(expr.func) if isinstance(expr, cst.Call) else dotted(expr)
    for cls in facts.index.classes:
        if cls.name.value == name or (
            name
            and any(
                dotted(a.value.func) == cls.name.value
                for a in facts.index.assigns
                if isinstance(a.value, cst.Call) and any(dotted(t.target) == name for t in a.targets)
            )
        ):
            return any("IterableDataset" in code_of(b.value) for b in cls.bases)
    return False


EXAMPLES = (
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        data = torch.randn(65, 4)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        shard = data[rank::world]
        for x in shard.split(8):
            loss = model(x).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        message="data sharded by hand with the rank: shard sizes can differ; use a DistributedSampler or Join, or cut every shard to the same length",
        note="65 rows over 2 ranks: 5 batches of 8 on rank 0, 4 on rank 1, and rank 0's last backward waits for ever:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.distributed.algorithms.join import Join
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        data = torch.randn(65, 4)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        shard = data[rank::world]
        with Join([model]):
            for x in shard.split(8):
                loss = model(x).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        dist.destroy_process_group()
        """,
        note="The same shards under `Join`: a rank that finishes first shadows the others' all-reduces:",
    ),
)
