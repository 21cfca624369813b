"""DDP202: a DistributedSampler is built, but the DataLoader never receives it."""

from __future__ import annotations

import libcst as cst

from ..edits import epoch_name, set_epoch_statements, with_kwarg, without_kwarg
from ..examples import clean, fixes, reports
from ..rule import Context, Order, Rule
from ..syntax import (
    assign_targets,
    code_of,
    dotted,
    is_literal,
    kwarg,
    method_name,
    positional,
    walk,
)


class SamplerNotPassed(Rule):
    code = "DDP202"
    name = "sampler-not-passed"
    message = (
        "DistributedSampler is built but never passed to the DataLoader: every rank still iterates the whole dataset"
    )
    docs = """
## What
A `DistributedSampler` assigned to a name that no DataLoader ever receives: the loader over the same
dataset has no `sampler=`. Returning it beside that loader (`return loader, sampler`, the caller then
calling `sampler.set_epoch(epoch)`) does not pass it either.

## Why
Building the sampler does nothing by itself. The DataLoader keeps its default sampler, so each of
the N processes iterates the full dataset (N times the work per epoch, duplicated gradients), and
`sampler.set_epoch(epoch)` reshuffles an object nobody reads. Nothing fails: the script just trains
on unsharded data.

## Example
```python
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=True)
for epoch in range(epochs):
    for xb, yb in train_loader:
```
becomes
```python
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)
for epoch in range(epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    for xb, yb in train_loader:
```
`shuffle=True` cannot stay next to a sampler (`ValueError: sampler option is mutually exclusive with
shuffle`): with a conditional sampler it becomes `shuffle=(sampler is None)`, so a plain run keeps
its order; with an unconditional one it is dropped (the sampler shuffles). When the epoch loop
never calls `set_epoch`, it is added as the loop's first statement.

The sampler may come from a helper, of this file or of one of the script's own modules
(`train_sampler = make_sampler(train_set)` with `make_sampler` returning a `DistributedSampler`, or
`None` without a process group): the loader over the dataset given to the helper gets
`sampler=train_sampler` the same way, with `shuffle=(train_sampler is None)` where the helper may
return `None`.

## Fix safety
Safe when exactly one DataLoader in the sampler's scope iterates the sampler's dataset and is built
after it. A loader `shuffle=` that is neither `True` nor `False` next to a helper's sampler is
reported only: it would have to move into the helper. Otherwise (no such loader, several, or a loader built before the sampler) the diagnostic
says where to pass it by hand.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for b in facts.data.sampler_bindings:
            name = b.name
            if _is_used(facts, name, b.stmt) or b.dataset is None:
                continue
            scope = facts.index.scope_of(b.stmt)
            loaders = [
                c
                for c in facts.data.loader_calls
                if facts.index.scope_of(c) is scope
                and kwarg(c, "sampler") is None
                and kwarg(c, "batch_sampler") is None
                and (lambda a: a is not None and a.value.deep_equals(b.dataset))(
                    positional(c, 0) or kwarg(c, "dataset")
                )
            ]
            if len(loaders) != 1:
                ctx.report(
                    b.report, f"{name} is built but never passed to a DataLoader: pass it as sampler={name}", fix="none"
                )
                continue
            loader = loaders[0]
            if not facts.index.before(b.stmt, loader):
                ctx.report(
                    b.report,
                    f"{name} is never passed to the DataLoader built before it: build it first and pass sampler={name}",
                    fix="none",
                )
                continue
            shuffle = kwarg(loader, "shuffle") or positional(loader, 2)
            if b.ctor is None and shuffle is not None and not is_literal(shuffle.value, True):
                if not is_literal(shuffle.value, False):
                    ctx.report(
                        b.report,
                        f"{name} is never passed to the DataLoader; its shuffle={code_of(shuffle.value)} belongs in "
                        f"the sampler, which a helper builds: pass sampler={name} and move shuffle into the helper",
                        fix="none",
                    )
                    continue
            if not ctx.report(b.report):
                continue
            self._pass(ctx, loader, b.ctor, name, b.conditional)
            self._set_epoch(ctx, loader, b.stmt, name, b.conditional)

    @staticmethod
    def _pass(ctx: Context, loader: cst.Call, sampler_call: cst.Call | None, name: str, conditional: bool) -> None:
        shuffle_kw = kwarg(loader, "shuffle")
        shuffle_pos = positional(loader, 2)  # DataLoader(dataset, batch_size, shuffle)
        shuffle = (
            shuffle_kw.value if shuffle_kw is not None else (shuffle_pos.value if shuffle_pos is not None else None)
        )
        dynamic = shuffle is not None and not is_literal(shuffle, True) and not is_literal(shuffle, False)
        replacement: cst.BaseExpression | None = None  # new value for the loader's shuffle
        if shuffle is not None and is_literal(shuffle, True):
            replacement = cst.parse_expression(f"({name} is None)") if conditional else None
        elif dynamic:
            shuffle_code = cst.Module(body=[]).code_for_node(shuffle)
            replacement = cst.parse_expression(f"({name} is None and {shuffle_code})") if conditional else None
            if sampler_call is not None and kwarg(sampler_call, "shuffle") is None:  # the choice moves into the sampler
                ctx.plan.replace(sampler_call, lambda n, v=shuffle: with_kwarg(n, "shuffle", v))

        def rewrite(node: cst.Call) -> cst.Call:
            if shuffle is not None and not is_literal(shuffle, False):
                if shuffle_kw is not None:
                    node = (
                        with_kwarg(node, "shuffle", replacement)
                        if replacement is not None
                        else without_kwarg(node, "shuffle")
                    )
                else:  # positional: keep the position, change the value
                    new = replacement if replacement is not None else cst.Name("False")
                    node = node.with_changes(
                        args=[a.with_changes(value=new) if a.deep_equals(shuffle_pos) else a for a in node.args]
                    )
            return with_kwarg(node, "sampler", cst.parse_expression(name))

        ctx.plan.replace(loader, rewrite)

    @staticmethod
    def _set_epoch(
        ctx: Context, loader_call: cst.Call, sampler_stmt: cst.CSTNode, name: str, conditional: bool
    ) -> None:
        facts = ctx.facts
        if any(dotted(c.func) == f"{name}.set_epoch" for c in facts.names.method_calls("set_epoch")):
            return
        for loader, batch_loop in facts.data.training_loaders:
            if loader.site.node is not loader_call:
                continue
            epoch_loop = facts.data.epoch_loop_for(batch_loop)
            if epoch_loop is None or epoch_name(ctx, epoch_loop, plan=False) is None:
                return
            same = facts.index.scope_of(epoch_loop) is facts.index.scope_of(sampler_stmt) or (
                name.startswith("self.")
                and facts.index.enclosing(epoch_loop, cst.ClassDef) is facts.index.enclosing(sampler_stmt, cst.ClassDef)
            )
            if same:
                stmts = set_epoch_statements(ctx, name, epoch_name(ctx, epoch_loop), optional=conditional)  # type: ignore[arg-type]
                ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)
            return


def _is_used(facts, name: str, binding: cst.CSTNode) -> bool:
    """Is the sampler handed to anything? Its own binding, `.set_epoch(...)` and `is None` tests do not count."""
    root = (
        facts.index.scope_of(binding)
        if not name.startswith("self.")
        else (facts.index.enclosing(binding, cst.ClassDef) or facts.module)
    )
    for node in walk(root):
        if not isinstance(node, (cst.Name, cst.Attribute)) or dotted(node) != name:
            continue
        parent = facts.index.parent.get(node)
        if isinstance(parent, cst.AssignTarget) and facts.index.site(node).stmt is binding:
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            grand = facts.index.parent.get(parent)
            if isinstance(grand, cst.Call) and method_name(grand) == "set_epoch":
                continue
            if parent.attr.value in ("set_epoch",):
                continue
            return True  # sampler.num_samples, sampler.indices...: read, treat as used
        if isinstance(parent, cst.Comparison) and any(
            isinstance(t.operator, (cst.Is, cst.IsNot))
            and isinstance(t.comparator, cst.Name)
            and t.comparator.value == "None"
            for t in parent.comparisons
        ):
            continue
        if (
            isinstance(parent, cst.Arg)
            and isinstance(facts.index.parent.get(parent), cst.Call)
            and method_name(facts.index.parent.get(parent)) == "set_epoch"
        ):
            continue
        if _returned_beside_its_loader(facts, node, root):
            continue
        return True
    return False


def _returned_beside_its_loader(facts, node: cst.CSTNode, scope: cst.CSTNode) -> bool:
    """`return loader, sampler` where `loader` is a DataLoader this scope builds without a sampler: the
    sampler only travels beside the loader (its caller calls `set_epoch` on a sampler that never
    reaches the loader), which is no use of it."""
    element = facts.index.parent.get(node)
    seq = facts.index.parent.get(element) if isinstance(element, cst.Element) else None
    if not isinstance(seq, cst.Tuple) or not isinstance(facts.index.parent.get(seq), cst.Return):
        return False
    names = {dotted(e.value) for e in seq.elements if e is not element}
    for call in facts.data.loader_calls:
        if facts.index.scope_of(call) is not scope or kwarg(call, "sampler") is not None:
            continue
        if names & set(assign_targets(facts.index.site(call).stmt)):
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
        loader = DataLoader(ds, batch_size=8, shuffle=True)
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
        note="The loader gets the sampler (which does the shuffling now) and each epoch reshuffles it:",
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
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        sampler = DistributedSampler(ds)
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
        message="sampler is never passed to the DataLoader built before it: build it first and pass sampler=sampler",
        note="Reported without a fix: the loader is built before the sampler, so the sampler must move first:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import BatchSampler, DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_sampler=BatchSampler(sampler, batch_size=8, drop_last=False))
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
        note="A sampler handed on through a `BatchSampler` is in use:",
    ),
)
