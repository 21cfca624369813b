"""DDP206: metrics accumulated over a DistributedSampler, which pads (or drops) samples."""

from __future__ import annotations

import libcst as cst

from ..diagnostic import NONE
from ..examples import clean, reports
from ..rule import Context, Rule
from ..syntax import assigned_value, calls_in, dotted, is_literal, kwarg, method_name, positional, walk


class PaddedEvalMetrics(Rule):
    code = "DDP206"
    name = "padded-eval-metrics"
    message = (
        "evaluation metrics over a DistributedSampler that pads: samples it repeats may count twice "
        "(whenever len(dataset) is not a multiple of the world size)"
    )
    fix = NONE
    docs = """
## What
A loop that accumulates metrics (`correct += ...`, `total += ...`) over a DataLoader whose sampler
is a `DistributedSampler` that pads (no `drop_last=True`), outside training (no `backward()` in the
loop).

## Why
`DistributedSampler` gives every rank the same number of samples. When the dataset size is not a
multiple of the world size it pads by repeating indices from the start (`drop_last=False`, the
default: 10 samples on 3 ranks are `[0, 3, 6, 9] [1, 4, 7, 0] [2, 5, 8, 1]`). Summed or
all-reduced, the metric counts some samples twice, and the result depends on the number of
processes. Nothing fails. A sampler with `drop_last=True` does not pad (it leaves out the last
`len(dataset) % WORLD_SIZE` samples instead, so nothing counts twice) and is not reported.

Whether a given run pads depends on the world size it is launched with, which the script does not
fix: a validation set of 10 000 divides evenly over 2, 4 or 8 processes but not over 3 or 6. So the
finding says the metric may be off, not that it is.

## Example
```python
val_sampler = DistributedSampler(val_set, shuffle=False)
val_loader = DataLoader(val_set, batch_size=64, sampler=val_sampler)
for x, y in val_loader:
    correct += (model(x).argmax(1) == y).sum().item()
```
Either evaluate the full validation set on every rank (no sampler: simple and exact, printing on
rank 0), or keep the sharding and all-reduce `(sum, count)` over an evaluation sampler that does not
pad (skip the indices past `len(dataset)`), as Accelerate's `gather_for_metrics` does.

## Fix safety
No automatic fix: which of the two the script wants (speed or simplicity) is the author's call.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        training = {id(loader.site.node) for loader, _ in facts.data.training_loaders}
        for loader in facts.data.loaders:
            call = loader.site.node
            assert isinstance(call, cst.Call)
            sampler = kwarg(call, "sampler")
            if id(call) in training or sampler is None or loader.target is None:
                continue
            ctor = _sampler_ctor(facts, sampler.value, call)
            if ctor is None or _drops_last(ctor):
                continue  # not a DistributedSampler, or one that does not pad
            for loop in facts.index.loops:
                if not isinstance(loop, cst.For) or not facts.data.iterates(loop, loader):
                    continue
                if any(method_name(c) == "backward" for c in calls_in(loop.body)):
                    continue
                if any(isinstance(n, cst.AugAssign) and isinstance(n.operator, cst.AddAssign) for n in walk(loop.body)):
                    ctx.report(sampler)
                    break


def _drops_last(ctor: cst.Call) -> bool:
    arg = kwarg(ctor, "drop_last") or positional(ctor, 5)  # (dataset, num_replicas, rank, shuffle, seed, drop_last)
    return arg is not None and is_literal(arg.value, True)


def _sampler_ctor(facts, expr: cst.BaseExpression, at: cst.CSTNode) -> cst.Call | None:
    """The DistributedSampler(...) call behind a loader's `sampler=` (inline or by variable), if any."""
    if is_literal(expr, None):
        return None
    if isinstance(expr, cst.Call):
        return expr if any(expr is s for s in facts.data.sampler_calls) else None
    name = dotted(expr)
    if name is None:
        return None
    scope = facts.index.scope_of(at)
    for site in reversed(facts.names.assignments(scope, name) or facts.names.assignments(facts.module, name)):
        value = assigned_value(site.stmt)
        if isinstance(value, cst.IfExp):
            value = value.body
        return value if isinstance(value, cst.Call) and any(value is s for s in facts.data.sampler_calls) else None
    return None


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
        model = DDP(nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        val = TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,)))
        val_loader = DataLoader(val, batch_size=4, sampler=DistributedSampler(val, shuffle=False))
        correct = torch.zeros(())
        with torch.no_grad():
            for x, y in val_loader:
                correct += (model(x).argmax(1) == y).sum()
        dist.all_reduce(correct)
        """,
        message=(
            "evaluation metrics over a DistributedSampler that pads: samples it repeats may count twice "
            "(whenever len(dataset) is not a multiple of the world size)"
        ),
        note="10 samples on 3 ranks: the sampler repeats 2 of them, and the accuracy counts them twice:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        val = TensorDataset(torch.randn(10, 4), torch.randint(0, 2, (10,)))
        correct = 0
        with torch.no_grad():
            for x, y in DataLoader(val, batch_size=4):
                correct += (model(x).argmax(1) == y).sum().item()
        if dist.get_rank() == 0:
            print(f"accuracy {correct / len(val):.2f}")
        """,
        note="Every rank evaluates the whole validation set, exactly; rank 0 prints:",
    ),
)
