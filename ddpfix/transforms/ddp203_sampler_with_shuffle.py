"""DDP203: `shuffle=True` together with `sampler=`: DataLoader raises."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg, without_kwarg
from ..examples import clean, fixes
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


EXAMPLES = (
    fixes(
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
        loader = DataLoader(ds, batch_size=8, shuffle=True, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
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
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="The sampler shuffles; the loader must not:",
    ),
    fixes(
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        parser = argparse.ArgumentParser()
        parser.add_argument("--shuffle", action="store_true")
        args = parser.parse_args()
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, shuffle=args.shuffle, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        parser = argparse.ArgumentParser()
        parser.add_argument("--shuffle", action="store_true")
        args = parser.parse_args()
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, shuffle=args.shuffle)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="A shuffle decided at run time moves into the sampler:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        DISTRIBUTED = int(os.environ.get("WORLD_SIZE", 1)) > 1
        if DISTRIBUTED:
            dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds) if DISTRIBUTED else None
        loader = DataLoader(ds, batch_size=8, shuffle=(sampler is None), sampler=sampler)
        model = DDP(nn.Linear(4, 1)) if DISTRIBUTED else nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="`shuffle=(sampler is None)`: the loader shuffles only when there is no sampler:",
    ),
)
