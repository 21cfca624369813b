"""DDP203: `shuffle=True` together with `sampler=`: DataLoader raises."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg, without_kwarg
from ..examples import clean, fixes
from ..loader_kwargs import kwargs_fix_blocker, star_dict
from ..rule import Context, Order, Rule
from ..syntax import assigned_value, code_of, dotted, is_literal, kwarg, mentions

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

`shuffle` can also come from a dict of arguments (`DataLoader(ds, sampler=sampler, **train_kwargs)`
with `"shuffle": True` in `train_kwargs`, perhaps only when CUDA is present). It is then taken out of
the dict just before the loader, whenever a sampler is set:
```python
if train_sampler is not None:
    train_kwargs.pop("shuffle", None)  # the sampler shuffles
train_loader = DataLoader(train_set, sampler=train_sampler, **train_kwargs)
```

## Fix safety
Safe. A `shuffle=` that already depends on the sampler (`shuffle=(sampler is None)`) is correct and
is left alone. A `shuffle` from a dict is fixed only when its value is `True`, the sampler has no
`shuffle=` of its own, and the dict is not used elsewhere after (or handed on before) the loader;
otherwise the diagnostic says which of these to settle by hand.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.data.loader_calls:
            shuffle, sampler = kwarg(call, "shuffle"), kwarg(call, "sampler")
            if shuffle is None and sampler is not None and not is_literal(sampler.value, None):
                _shuffle_from_kwargs(ctx, call, sampler)
                continue
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


def _shuffle_from_kwargs(ctx: Context, call: cst.Call, sampler: cst.Arg) -> None:
    """`DataLoader(ds, sampler=sampler, **train_kwargs)` where the dict may hold a true `shuffle`."""
    facts = ctx.facts
    contents = facts.data.kwargs_of(call)
    if contents is None or not contents.has("shuffle"):
        return
    values = contents.keys["shuffle"].values
    sampler_name = dotted(sampler.value)
    if all(is_literal(v, False) for v in values) or (sampler_name and any(mentions(v, sampler_name) for v in values)):
        return
    name = star_dict(call)
    if name is not None and _popped_for_sampler(facts, name, sampler_name, call):
        return
    star = next(a for a in call.args if a.star == "**")
    where = f"{name}" if name else "its **kwargs"
    message = (
        f"shuffle from {where} together with sampler=: DataLoader raises 'sampler option is mutually exclusive "
        "with shuffle'"
    )
    ctor = _sampler_ctor(facts, sampler.value, call)
    why = kwargs_fix_blocker(facts, call)
    if why is None and not all(is_literal(v, True) for v in values):
        why = f"its shuffle is {code_of(values[0])}: give the sampler that value and take shuffle out of {name}"
    if why is None and ctor is None and dotted(sampler.value) is None:
        why = f"take shuffle out of {name} whenever the sampler is set"
    if why is None and ctor is not None and kwarg(ctor, "shuffle") is not None:
        why = f"the sampler has its own shuffle=: take shuffle out of {name}"
    if why is not None:
        ctx.report(star, f"{message}; {why}", fix="none")
        return
    if not ctx.report(star, message):
        return
    q = contents.quote
    pop = f"{name}.pop({q}shuffle{q}, None)  # the sampler shuffles"
    if ctor is not None and (sampler.value is ctor or not _conditional(facts, sampler.value, call)):
        stmts = ctx.plan.statements(pop)
    else:
        stmts = ctx.plan.statements("if {s} is not None:\n    {pop}", s=code_of(sampler.value), pop=pop)
    ctx.plan.insert_before(facts.index.site(call).stmt, stmts, order=Order.SAMPLER)


def _conditional(facts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """Is the sampler variable bound to `DistributedSampler(...) if ... else None`?"""
    name = dotted(expr)
    sites = facts.names.assignments(facts.index.scope_of(at), name) if name else []
    value = assigned_value(sites[-1].stmt) if sites else None
    return isinstance(value, cst.IfExp)


def _popped_for_sampler(facts, name: str, sampler: str | None, call: cst.Call) -> bool:
    """`kw.pop("shuffle", None)` in the loader's scope before it, unconditional or under a test of the sampler."""
    scope = facts.index.scope_of(call)
    for pop in facts.names.method_calls("pop"):
        if dotted(pop.func) != f"{name}.pop" or not pop.args or not is_literal(pop.args[0].value, "shuffle"):
            continue
        if facts.index.scope_of(pop) is not scope or not facts.index.before(pop, call):
            continue
        tests = [a.test for a in facts.index.ancestors(pop) if isinstance(a, cst.If) and facts.index.contains(scope, a)]
        if all(sampler is not None and mentions(t, sampler) for t in tests):
            return True
    return False


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
