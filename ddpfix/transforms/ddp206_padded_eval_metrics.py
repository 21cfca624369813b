"""DDP206: metrics accumulated over a DistributedSampler, which pads (or drops) samples."""

from __future__ import annotations

import libcst as cst

from ..diagnostic import NONE
from ..rule import Context, Rule
from ..syntax import assigned_value, calls_in, dotted, is_literal, kwarg, method_name, positional, walk


class PaddedEvalMetrics(Rule):
    code = "DDP206"
    name = "padded-eval-metrics"
    message = (
        "evaluation metrics over a DistributedSampler: it repeats samples to even out the shards, so some count twice"
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
