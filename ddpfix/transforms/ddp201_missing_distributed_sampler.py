"""DDP201: the training DataLoader has no DistributedSampler, so every rank sees the whole dataset."""

from __future__ import annotations

import libcst as cst

from ..analysis import Loader
from ..analysis.dataparallel import dataparallel_conversions
from ..edits import set_epoch_statements, with_kwarg
from ..rule import Context, Order, Rule
from ..syntax import assigned_value, code_of, dotted, is_literal, kwarg, loop_variable, positional

SAMPLER = "torch.utils.data.distributed.DistributedSampler"


class MissingDistributedSampler(Rule):
    code = "DDP201"
    name = "missing-distributed-sampler"
    message = "training DataLoader without a DistributedSampler: every rank trains on the whole dataset"
    requires = ("DDP001",)
    docs = """
## What
A DataLoader iterated by the training loop over a map-style dataset, with no `sampler=`.

## Why
DDP does not shard input. Without a `DistributedSampler` each of the N processes iterates the
full dataset, so an "epoch" does N times the work and the gradient average sees duplicates.

## Example
```python
train_loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
for epoch in range(epochs):
    for xb, yb in train_loader:
```
becomes
```python
train_dataset = TensorDataset(x, y)
train_sampler = DistributedSampler(train_dataset) if DISTRIBUTED else None
train_loader = DataLoader(train_dataset, batch_size=32, shuffle=(train_sampler is None), sampler=train_sampler)
for epoch in range(epochs):
    if train_sampler is not None:
        train_sampler.set_epoch(epoch)
    for xb, yb in train_loader:
```
`shuffle` moves into the sampler (`DistributedSampler(..., shuffle=False)` when the loader did not
shuffle), and `set_epoch(epoch)` becomes the first statement of the epoch loop so every epoch gets a
new order. A plain run has no sampler and keeps the exact same order and random-number use.

## Fix safety
Safe for map-style datasets. Loaders with `batch_sampler=` or over an `IterableDataset` get the
diagnostic only. With a model still in `nn.DataParallel` the sampler is as unsafe as its conversion
(DDP302), and it is not added where that conversion is not possible: sharded data without the DDP
wrap would train unsynchronised copies.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        # Sharding the data is only right once gradients are synchronised: a model left in
        # nn.DataParallel (its conversion, DDP302, is an unsafe fix) would train per-rank copies.
        # So with a DataParallel model the sampler is as unsafe as that conversion, in check and fix alike.
        dataparallel = any(facts.models.dataparallel(m) is not None for m in facts.models.trained)
        # A DataParallel that DDP302 cannot convert stays: sharding the data then trains N unsynchronised copies.
        stuck = dataparallel and any(
            c.blocker is not None for c in dataparallel_conversions(facts.index, facts.names, facts.models)
        )
        for loader, batch_loop in facts.data.training_loaders:
            if stuck:
                ctx.report(
                    loader.site.node,
                    "training DataLoader without a DistributedSampler; the model is still nn.DataParallel, which "
                    "cannot be converted automatically (DDP302): convert it to DDP by hand, then shard the data",
                    fix="none",
                )
                continue
            if dataparallel and not ctx.unsafe_fixes:
                ctx.report(
                    loader.site.node,
                    "training DataLoader without a DistributedSampler; the model is still nn.DataParallel: "
                    "convert it to DDP first (DDP302, --unsafe-fixes), then shard the data",
                    fix="unsafe",
                )
                continue
            call = loader.site.node
            assert isinstance(call, cst.Call)
            if kwarg(call, "sampler") is not None:
                _swap_local_sampler(ctx, loader, batch_loop, kwarg(call, "sampler"))
                continue
            if _has_unpassed_sampler(facts, call):
                continue
            if any(a.star == "**" for a in call.args):
                ctx.report(
                    call,
                    "training DataLoader without a DistributedSampler, its arguments come from **kwargs: "
                    "pass sampler=DistributedSampler(dataset) and move shuffle into it by hand",
                    fix="none",
                )
                continue
            if kwarg(call, "batch_sampler") is not None:
                ctx.report(
                    call, "training DataLoader with a batch_sampler: shard the batches per rank by hand", fix="none"
                )
                continue
            ds_arg = positional(call, 0) or kwarg(call, "dataset")
            if ds_arg is None or _is_iterable_dataset(facts, ds_arg.value):
                ctx.report(
                    call,
                    "training DataLoader over an IterableDataset: shard it per rank inside the dataset",
                    fix="none",
                )
                continue
            if not ctx.report(call, fix="unsafe" if dataparallel else None):
                continue
            _add_sampler(ctx, loader, batch_loop, ds_arg)


LOCAL_SAMPLERS = {
    "torch.utils.data.RandomSampler": "",
    "torch.utils.data.sampler.RandomSampler": "",
    "torch.utils.data.SequentialSampler": ", shuffle=False",
    "torch.utils.data.sampler.SequentialSampler": ", shuffle=False",
}


def _swap_local_sampler(ctx: Context, loader: Loader, batch_loop: cst.For, arg: cst.Arg) -> None:
    """`sampler=RandomSampler(ds)` (inline or through a variable): every rank still draws from the
    whole dataset. Distributed runs get a DistributedSampler instead; plain runs keep theirs."""
    facts = ctx.facts
    ctor, var = arg.value, None
    if not isinstance(ctor, cst.Call):
        var = dotted(ctor)
        sites = facts.names.assignments(facts.index.scope_of(loader.site.node), var) if var else []
        value = assigned_value(sites[-1].stmt) if sites else None
        ctor = value if isinstance(value, cst.Call) else None
    if ctor is None or facts.names.call_qual(ctor) not in LOCAL_SAMPLERS:
        return
    ds = positional(ctor, 0) or kwarg(ctor, "data_source")
    if ds is None or not ctx.report(
        ctor, "training DataLoader samples the whole dataset on every rank: use a DistributedSampler when distributed"
    ):
        return
    cls = ctx.plan.ref(SAMPLER, "DistributedSampler")
    dist_flag = ctx.env("DISTRIBUTED")
    extra = LOCAL_SAMPLERS[facts.names.call_qual(ctor) or ""]
    ctx.plan.replace(
        ctor, lambda n: cst.parse_expression(f"{cls}({code_of(ds.value)}{extra}) if {dist_flag} else {code_of(n)}")
    )
    epoch_loop = facts.data.epoch_loop_for(batch_loop)
    epoch = loop_variable(epoch_loop) if epoch_loop is not None else None
    if epoch is None:
        return
    if var is not None and facts.index.scope_of(epoch_loop) is facts.index.scope_of(loader.site.node):
        target = var
    else:
        reach = facts.data.loader_reach(loader, epoch_loop)
        if reach is None:
            return
        target = f"{reach}.sampler"
    stmts = ctx.plan.statements("if {d}:\n    {s}.set_epoch({e})", d=dist_flag, s=target, e=epoch)
    ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)


def _has_unpassed_sampler(facts, call: cst.Call) -> bool:
    """A DistributedSampler already built over this loader's dataset (never passed: DDP202's case)."""
    ds = positional(call, 0) or kwarg(call, "dataset")
    if ds is None:
        return False
    for sampler in facts.data.sampler_calls:
        arg = positional(sampler, 0) or kwarg(sampler, "dataset")
        if arg is not None and arg.value.deep_equals(ds.value):
            return True
    return False


def _is_iterable_dataset(facts, expr: cst.BaseExpression) -> bool:
    name = dotted(expr.func) if isinstance(expr, cst.Call) else None
    for cls in facts.index.classes:
        if name == cls.name.value or (
            isinstance(expr, cst.Name) and _bound_to_class(facts, expr.value, cls.name.value)
        ):
            return any("IterableDataset" in code_of(b.value) for b in cls.bases)
    return False


def _bound_to_class(facts, var: str, cls_name: str) -> bool:
    for assign in facts.index.assigns:
        if any(dotted(t.target) == var for t in assign.targets) and isinstance(assign.value, cst.Call):
            if dotted(assign.value.func) == cls_name:
                return True
    return False


def _prefix(target: str) -> str:
    """`train_loader` -> "train"; `loader`, `dataloader`, `data_loader` -> "" (plain `sampler`)."""
    base = target.split(".")[-1]
    for suffix in ("_dataloader", "_loader", "dataloader", "loader", "_dl", "dl", "_data"):
        if base.lower().endswith(suffix):
            rest = base[: -len(suffix)].rstrip("_")
            return "" if rest.lower() in ("", "data") else rest
    return "" if base.lower() in ("data", "dataset") else base


def _add_sampler(ctx: Context, loader: Loader, batch_loop: cst.For, ds_arg: cst.Arg) -> None:
    plan = ctx.plan
    call = loader.site.node
    target = loader.target or "loader"
    prefix = _prefix(target)
    head = "self." if target.startswith("self.") else ""
    stmt = loader.site.stmt
    sampler_cls = plan.ref(SAMPLER, "DistributedSampler")
    dist_flag = ctx.env("DISTRIBUTED")

    ds_expr = dotted(ds_arg.value)
    new_stmts: list[cst.BaseStatement] = []
    if ds_expr is None:
        ds_expr = plan.fresh(f"{prefix}_dataset" if prefix else "dataset")
        new_stmts += plan.statements("{ds} = {value}", ds=ds_expr, value=code_of(ds_arg.value))
    sampler_base = f"{prefix}_sampler" if prefix else "sampler"
    sampler = f"{head}{sampler_base}" if head else plan.fresh(sampler_base)

    shuffle_arg = kwarg(call, "shuffle")
    shuffle_pos = positional(call, 2)  # DataLoader(dataset, batch_size, shuffle)
    shuffle = shuffle_arg.value if shuffle_arg is not None else (shuffle_pos.value if shuffle_pos is not None else None)
    if shuffle is not None and is_literal(shuffle, True):
        sampler_args = ds_expr
        loader_shuffle = f"({sampler} is None)"
    elif shuffle is None or is_literal(shuffle, False):
        sampler_args = f"{ds_expr}, shuffle=False"
        loader_shuffle = None
    else:
        sampler_args = f"{ds_expr}, shuffle={code_of(shuffle)}"
        loader_shuffle = f"({sampler} is None and {code_of(shuffle)})"
    new_stmts += plan.statements(
        "{s} = {cls}({args}) if {d} else None", s=sampler, cls=sampler_cls, args=sampler_args, d=dist_flag
    )
    plan.insert_before(stmt, new_stmts, order=Order.SAMPLER)

    def rewrite(node: cst.Call) -> cst.Call:
        args = list(node.args)
        if dotted(ds_arg.value) is None:
            args = [
                a.with_changes(value=cst.Name(ds_expr))
                if a.value.deep_equals(ds_arg.value) and (a.keyword is None or a.keyword.value == "dataset")
                else a
                for a in args
            ]
            node = node.with_changes(args=args)
        if loader_shuffle is not None:
            expr = cst.parse_expression(loader_shuffle)
            if shuffle_arg is None and shuffle_pos is not None:
                node = node.with_changes(
                    args=[a.with_changes(value=expr) if a is _same(node, shuffle_pos) else a for a in node.args]
                )
            else:
                node = with_kwarg(node, "shuffle", expr)
        return with_kwarg(node, "sampler", cst.parse_expression(sampler))

    plan.replace(call, rewrite)
    _add_set_epoch(ctx, loader, batch_loop, sampler)


def _same(node: cst.Call, original: cst.Arg) -> cst.Arg | None:
    for a in node.args:
        if a.deep_equals(original):
            return a
    return None


def _add_set_epoch(ctx: Context, loader: Loader, batch_loop: cst.For, sampler: str) -> None:
    facts = ctx.facts
    epoch_loop = facts.data.epoch_loop_for(batch_loop)
    if epoch_loop is None:
        return
    epoch = loop_variable(epoch_loop)
    if epoch is None:
        return
    same_scope = (
        facts.index.scope_of(epoch_loop) is facts.index.scope_of(loader.site.node)
        and loader.binding is loader.site.stmt
    )
    same_class = sampler.startswith("self.") and facts.index.enclosing(epoch_loop, cst.ClassDef) is loader.site.cls
    if same_scope or same_class:
        stmts = set_epoch_statements(ctx, sampler, epoch, optional=True)
    else:
        reach = facts.data.loader_reach(loader, epoch_loop)
        if reach is None:
            return
        cls = ctx.plan.ref(SAMPLER, "DistributedSampler")
        stmts = ctx.plan.statements(
            """
            if isinstance({l}.sampler, {cls}):
                {l}.sampler.set_epoch({e})
            """,
            l=reach,
            cls=cls,
            e=epoch,
        )
    ctx.plan.prepend(epoch_loop.body, stmts, order=Order.SET_EPOCH)
