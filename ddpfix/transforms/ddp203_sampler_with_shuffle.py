"""DDP203: `shuffle=True` together with `sampler=`: DataLoader raises."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg, without_kwarg
from ..rule import Context, Rule
from ..syntax import assigned_value, dotted, is_literal, kwarg, mentions

SAMPLERS = ("DistributedSampler",)


class SamplerWithShuffle(Rule):
    code = "DDP203"
    name = "sampler-with-shuffle"
    message = "DataLoader gets both shuffle= and sampler=: 'sampler option is mutually exclusive with shuffle'"
    docs = """
## What
`DataLoader(ds, shuffle=True, sampler=sampler)`.

## Why
DataLoader raises `ValueError: sampler option is mutually exclusive with shuffle` as soon as both are
set. With a `DistributedSampler` the shuffling belongs to the sampler.

## Example
```python
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=32, shuffle=True, sampler=sampler)
```
becomes
```python
sampler = DistributedSampler(ds)
loader = DataLoader(ds, batch_size=32, sampler=sampler)
```
`DistributedSampler` shuffles by default; an explicit `shuffle=False` on the sampler is set to the
loader's value.

## Fix safety
Safe. A `shuffle=` that already depends on the sampler (`shuffle=(sampler is None)`) is correct and
is left alone.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.data.loader_calls:
            shuffle, sampler = kwarg(call, "shuffle"), kwarg(call, "sampler")
            if (
                shuffle is None
                or sampler is None
                or is_literal(shuffle.value, False)
                or is_literal(sampler.value, None)
            ):
                continue
            sampler_name = dotted(sampler.value)
            if sampler_name and mentions(shuffle.value, sampler_name):
                continue  # shuffle=(sampler is None): already exclusive
            if not ctx.report(shuffle):
                continue
            ctx.plan.replace(call, lambda n: without_kwarg(n, "shuffle"))
            ctor = _sampler_ctor(facts, sampler.value, call)
            if ctor is not None and not is_literal(shuffle.value, True):
                ctx.plan.replace(ctor, lambda n, v=shuffle.value: with_kwarg(n, "shuffle", v))
            elif ctor is not None and kwarg(ctor, "shuffle") is not None:
                ctx.plan.replace(ctor, lambda n: with_kwarg(n, "shuffle", cst.Name("True")))


def _sampler_ctor(facts, expr: cst.BaseExpression, at: cst.CSTNode) -> cst.Call | None:
    """The DistributedSampler(...) call the `sampler=` argument refers to (inline or by variable)."""
    if isinstance(expr, cst.Call) and any(expr is s for s in facts.data.sampler_calls):
        return expr
    name = dotted(expr)
    if name is None:
        return None
    for site in reversed(facts.names.assignments(facts.index.scope_of(at), name)):
        value = assigned_value(site.stmt)
        if isinstance(value, cst.IfExp):
            value = value.body
        if isinstance(value, cst.Call) and any(value is s for s in facts.data.sampler_calls):
            return value
    return None
