"""DDP204: a DistributedSampler whose set_epoch is never called: the same order every epoch."""

from __future__ import annotations

import libcst as cst

from ..analysis.values import handle_of
from ..drawn_epochs import report_passes
from ..edits import engine_set_epoch, epoch_name, set_epoch_statements
from ..examples import clean, fixes, reports
from ..loader_subclass_epochs import subclass_samplers
from ..module_epochs import keep_set_epoch, set_epoch_blocker, through_loader
from ..rule import Context, Order, Rule
from ..syntax import assign_targets, assigned_value, dotted, kwarg, receiver


class MissingSetEpoch(Rule):
    code = "DDP204"
    name = "missing-set-epoch"
    message = "DistributedSampler without set_epoch(epoch): every epoch sees the same order"
    docs = """
## What
An epoch loop over a DataLoader whose `DistributedSampler` never gets `set_epoch(epoch)`. A call to it
counts through any name that reaches the sampler where the epoch loop runs: the sampler's variable,
`loader.sampler`, or the parameter a training function receives the loader as
(`fit(model, train_loader=loader)`, then `train_loader.sampler.set_epoch(epoch)` inside `fit`).
Also a sampler a DataLoader subclass of the script builds in its own `__init__`, when the loader is
handed to a class of the script whose method trains over it and whose epoch loop runs that method
(`Trainer(model, optimizer, train_loader).fit(epochs)`): the fix sets the epoch first thing in that
loop, through the loader, when its sampler is a `DistributedSampler`. A script that calls
`set_epoch` anywhere is left to its own way there.

## Why
`DistributedSampler` seeds its shuffle with `seed + epoch`. Without `set_epoch` the epoch stays 0
and every epoch iterates the same permutation (PyTorch's docs: call it "at the beginning of each
epoch before creating the DataLoader iterator").

## Example
```python
for epoch in range(epochs):
    for x, y in loader:
```
becomes
```python
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    for x, y in loader:
```

The epoch loop is a `for` loop, or a `while epoch < n:` loop (also `<=`, `!=`) that steps its
counter by one at its own level (`epoch += 1`); `for _ in range(n):` becomes `for epoch in range(n):`
when its body does not read `_`. A `while` loop that counts no epochs (`while step < max_steps:`,
`while not done:`: a budget of steps, passes over the loader until it is spent) gets a count of its
passes, `epoch = 0` before it and `epoch += 1` as the last statement of its body, unless a `continue`
of that loop would skip the count. A loader an ignite trainer runs gets an `Events.EPOCH_STARTED`
handler before `trainer.run(...)` that calls `set_epoch(engine.state.epoch - 1)`.

## Fix safety
Safe: `set_epoch` becomes the first statement of the epoch loop (guarded by `is not None` when the
sampler is built conditionally). A loader whose epochs run in a function or method of the script's
own modules (`simclr.train(train_loader)`) gets the call at the start of that module's epoch loop,
through the parameter it arrives as (or the attribute a class keeps it in, `self.train_loader`) and
only when its sampler is a `DistributedSampler`
(`if isinstance(getattr(train_loader, "sampler", None), DistributedSampler):`), so the module keeps
working for a plain run and for any other caller; the message names the file and line. A function
or method (here or in a module; also a generator that yields the batches to the training loop) that
draws its batches with `next()` from `iter(loader)`, made once in its body before its loop and again
when it runs out, gets a count of the passes and the call before each `iter()` (see DDP201); one
that makes it otherwise is reported without a fix, and one that makes it once runs one pass and
needs no epoch. A sampler the epoch loop cannot name (built in a helper that returns only the
loader, or in the caller of the function that runs the epochs) is reached through the loader as the
loop names it, with the same `isinstance` test. So is a loader kept by an instance of a class of the
script's modules whose method runs one pass per call (`trainer = Train(model, loader)`, then
`trainer.run_epoch()` in the script's epoch loop): the call goes first in that loop. Reported
without a fix: an epoch loop with no epoch number to pass (a `while` loop with a `continue` of its
own, a `for _` loop that reads `_`), a loader the epoch loop cannot name either, and a module the fix may not edit (the
message says why).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        called = {_spelled(receiver(c)) for c in facts.names.method_calls("set_epoch") if receiver(c) is not None}
        for loader, batch_loop in facts.data.training_loaders:
            call = loader.site.node
            sampler_arg = kwarg(call, "sampler")  # type: ignore[arg-type]
            if sampler_arg is None:
                continue
            epoch_loop = facts.data.epoch_loop_for(batch_loop)
            reach = facts.data.loader_reach(loader, epoch_loop) if epoch_loop is not None else None
            if reach is not None and f"{reach}.sampler" in called:
                continue
            sampler = dotted(sampler_arg.value)
            inline = isinstance(sampler_arg.value, cst.Call) and any(
                sampler_arg.value is s for s in facts.data.sampler_calls
            )
            if inline:
                site, optional = sampler_arg.value, False
                sampler = (
                    f"{reach}.sampler" if reach is not None else None
                )  # DataLoader(ds, sampler=DistributedSampler(ds))
            else:
                if sampler is None or sampler in called:
                    continue
                site = _sampler_site(facts, sampler, call)
                if site is None:
                    continue
                optional = isinstance(assigned_value(facts.index.site(site).stmt), cst.IfExp)
                same = epoch_loop is not None and (
                    facts.index.scope_of(epoch_loop) is facts.index.scope_of(call)
                    or (
                        sampler.startswith("self.")
                        and facts.index.enclosing(epoch_loop, cst.ClassDef) is loader.site.cls
                    )
                )
                if not same:
                    sampler = None
            handoff = facts.data.handoff(batch_loop)
            if handoff is not None and epoch_loop is None:
                _handed(ctx, loader, handoff, site, called, sampler if not inline else None, optional)
                continue
            if epoch_loop is None:
                report_passes(ctx, batch_loop, site, called)
                continue
            epoch = epoch_name(ctx, epoch_loop, plan=False)
            via = reach if sampler is None and not inline else None  # the sampler is made in another scope
            if epoch is None or (sampler is None and via is None):
                ctx.report(
                    site,
                    "DistributedSampler never gets set_epoch(epoch): call it first thing in the epoch loop"
                    + ("" if epoch is not None or sampler is None else ", which has no epoch variable"),
                    fix="none",
                )
                continue
            named = sampler or f"{via}.sampler"
            if not ctx.report(site, f"{named} never gets set_epoch(epoch): every epoch sees the same order"):
                continue
            epoch = epoch_name(ctx, epoch_loop)
            stmts = (
                set_epoch_statements(ctx, sampler, epoch, optional=optional)
                if sampler is not None
                else through_loader(ctx, via, epoch)  # type: ignore[arg-type]
            )
            ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)
        subclass_samplers(ctx)  # a DataLoader subclass's own sampler, a class of the script running the epochs


def _handed(ctx: Context, loader, handoff, site, called: set, sampler: str | None, optional: bool) -> None:
    """The epochs run in the code the loader is handed to: an ignite trainer gets an EPOCH_STARTED
    handler; a function of the script's own modules that runs the epochs without a set_epoch is
    reported (the fix cannot edit that file)."""
    via_loader = f"{loader.target}.sampler"
    if via_loader in called or (sampler is not None and sampler in called):
        return
    if handoff.engine is not None:
        message = f"{sampler or 'the DistributedSampler'} never gets set_epoch(epoch): every epoch sees the same order"
        if ctx.report(site, message):
            index = ctx.facts.index
            if sampler is not None and index.scope_of(loader.site.stmt) is index.scope_of(handoff.call):
                engine_set_epoch(ctx, handoff, sampler, test="optional" if optional else None)
            else:
                engine_set_epoch(ctx, handoff, via_loader, test="loader")
        return
    if handoff.epochs_there and not handoff.sets_epoch:
        head = f"DistributedSampler never gets set_epoch(epoch): {handoff.where} runs the epochs over {loader.target}"
        assert ctx.rule is not None
        why, where = set_epoch_blocker(ctx, ctx.rule, handoff)
        if why is not None:
            there = f"{handoff.there}.sampler" if handoff.there else via_loader
            message = f"{head}: call {there}.set_epoch(epoch) at the start of each epoch there ({why})"
            ctx.report(site, message, fix="none")
        elif ctx.report(site, f"{head}: the fix sets its sampler's epoch at the start of each epoch there ({where})"):
            keep_set_epoch(ctx, ctx.rule, handoff)


def _sampler_site(facts, name: str, at: cst.CSTNode) -> cst.Call | None:
    for site in reversed(
        facts.names.assignments(facts.index.scope_of(at), name) or facts.names.assignments(facts.module, name)
    ):
        value = assigned_value(site.stmt)
        if isinstance(value, cst.IfExp):
            value = value.body
        if (
            isinstance(value, cst.Call)
            and any(value is s for s in facts.data.sampler_calls)
            and name in assign_targets(site.stmt)
        ):
            return value
    return None


def _spelled(expr: cst.BaseExpression) -> str | None:
    """`train_sampler`, `self.loader.sampler`, `loaders["train"].sampler`: how a receiver is written."""
    if isinstance(expr, cst.Attribute):
        base = handle_of(expr.value)
        return f"{base}.{expr.attr.value}" if base is not None else None
    return handle_of(expr)


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class ShardedLoader(DataLoader):
            def __init__(self, dataset, batch_size):
                sampler = DistributedSampler(dataset) if dist.is_initialized() else None
                super().__init__(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


        class Trainer:
            def __init__(self, model, optimizer, train_loader):
                self.model = model
                self.optimizer = optimizer
                self.train_loader = train_loader

            def train(self):
                for x, y in self.train_loader:
                    self.optimizer.zero_grad()
                    nn.functional.mse_loss(self.model(x), y).backward()
                    self.optimizer.step()

            def fit(self, epochs):
                for epoch in range(epochs):
                    self.train()


        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        loader = ShardedLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loader).fit(3)
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


        class ShardedLoader(DataLoader):
            def __init__(self, dataset, batch_size):
                sampler = DistributedSampler(dataset) if dist.is_initialized() else None
                super().__init__(dataset, batch_size=batch_size, shuffle=(sampler is None), sampler=sampler)


        class Trainer:
            def __init__(self, model, optimizer, train_loader):
                self.model = model
                self.optimizer = optimizer
                self.train_loader = train_loader

            def train(self):
                for x, y in self.train_loader:
                    self.optimizer.zero_grad()
                    nn.functional.mse_loss(self.model(x), y).backward()
                    self.optimizer.step()

            def fit(self, epochs):
                for epoch in range(epochs):
                    if isinstance(getattr(self.train_loader, "sampler", None), DistributedSampler):
                        self.train_loader.sampler.set_epoch(epoch)
                    self.train()


        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        loader = ShardedLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loader).fit(3)
        """,
        note=(
            "A DataLoader subclass of the script builds its own DistributedSampler and a class of the script "
            "runs the epochs: set first thing in that epoch loop, through the loader:"
        ),
    ),
    fixes(
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
        for epoch in range(3):
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
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
        for epoch in range(3):
            if sampler is not None:
                sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="Each epoch reshuffles; the sampler is optional here, so the call is too:",
    ),
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler


        def make_loader():
            ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
            sampler = DistributedSampler(ds)
            return DataLoader(ds, batch_size=8, sampler=sampler)


        dist.init_process_group("gloo")
        loader = make_loader()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
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


        def make_loader():
            ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
            sampler = DistributedSampler(ds)
            return DataLoader(ds, batch_size=8, sampler=sampler)


        dist.init_process_group("gloo")
        loader = make_loader()
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            if isinstance(getattr(loader, "sampler", None), DistributedSampler):
                loader.sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="The sampler is built in a helper, out of the epoch loop's reach: set through the loader, where it is one:",
    ),
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
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        step = 0
        while step < 100:
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                if step == 100:
                    break
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
        step = 0
        epoch = 0
        while step < 100:
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                step += 1
                if step == 100:
                    break
            epoch += 1
        """,
        note="A budget of steps, not epochs: the passes over the loader are counted, and each sets the epoch:",
    ),
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
        done = False
        while not done:
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if loss.item() > 1.0:
                continue
            done = loss.item() < 0.01
        """,
        message=(
            "DistributedSampler never gets set_epoch(epoch): call it first thing in the epoch loop, "
            "which has no epoch variable"
        ),
        note="Reported without a fix: the epoch loop counts no epochs, and a `continue` would skip a count of its passes:",
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
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            loader.sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="`set_epoch` through the loader's own `sampler` attribute:",
    ),
)
