"""DDP313: ReduceLROnPlateau stepped with a metric of this rank's shard only."""

from __future__ import annotations

import libcst as cst

from ..analysis.flow import binds, read_names
from ..derived_metrics import derivations_of, derived_reductions, derived_shown
from ..examples import clean, fixes, reports
from ..metric_reduce import AVG, reached_alike, reducer_of, reduction
from ..order import Order
from ..rule import NONE, Context, Rule
from ..sharded_totals import appended_lists, list_means, reduces_on_cpu, shard_view
from ..syntax import code_of, dotted, kwarg, positional, walk


class PlateauMetricPerRank(Rule):
    code = "DDP313"
    name = "plateau-metric-per-rank"
    reads = frozenset({"cut"})
    message = (
        "ReduceLROnPlateau stepped with a metric of this rank's shard only: the ranks can lower their "
        "learning rates at different epochs and their models drift apart; all-reduce it first"
    )
    docs = """
## What
`scheduler.step(metric)` of a `ReduceLROnPlateau` scheduler, where the metric is computed over this
rank's shard of the data: it reads a total that a loop over a sharded loader (or over batches cut by
rank) accumulates (`epoch_loss += loss.item()`), or a list such a loop appends to
(`epoch_loss.append(loss.item())`), directly or through one assignment in the same function
(`val_loss = total / len(loader)`, then `scheduler.step(val_loss)`). Reported on a script ddpfix
converts (its training loader is sharded by DDP201, its batches cut by DDP209) and on one that is
distributed already.

## Why
Every rank keeps its own scheduler and steps it with its own number. Whether a metric counts as an
improvement is decided per rank, so one rank halves its learning rate at epoch 3 and another at
epoch 5. DDP still averages the gradients, but each rank then takes a step of a different size: the
copies of the model drift apart, silently (nothing crashes; the checkpoint rank 0 writes is one of
several different models).

## Example
```python
for epoch in range(epochs):
    epoch_loss = []
    for x, y in loader:
        ...
        epoch_loss.append(loss.item())
    scheduler.step(np.mean(epoch_loss))
```
becomes
```python
for epoch in range(epochs):
    epoch_loss = []
    for x, y in loader:
        ...
        epoch_loss.append(loss.item())
    avg_epoch_loss = reduce_over_ranks(np.mean(epoch_loss), average=True)
    scheduler.step(avg_epoch_loss)
```
with DDP409's helper `reduce_over_ranks` (the value itself in a single process). A mean over this
rank's batches (`np.mean(xs)`, `sum(xs) / len(xs)`, a total divided by `len(loader)` or by a step
count) is averaged over the ranks; a total shown as it is, or divided by the size of the dataset, is
summed, as DDP409 decides. A metric derived from totals through one assignment (`val_loss = total /
len(loader)`, then `scheduler.step(val_loss)`) has the totals reduced just before that assignment, as
DDP409 reduces a value it shows, once for both rules, so a print of `val_loss` and the step read the
same number; where that assignment is not in a block that holds the step, the metric itself is
reduced just before the step.

## Fix safety
Safe where the step is reached alike by every rank (the reduction is a collective), as DDP409's fix:
`python train.py` steps the scheduler with the number it used before. No fix where a list is used in
any other way than its mean (`max(xs)`, `xs[-1]`), where totals are summed in one place and
averaged in another, where the step is not reached alike by every rank (inside a `while`, or under a
condition that reads what the loop changes), or, on a script that is distributed already, where its
process group cannot reduce a CPU tensor (NCCL alone, or set up out of sight).
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        plateaus = _plateau_schedulers(facts)
        if not plateaus:
            return
        view = shard_view(ctx)
        if view is None:
            return
        lists = appended_lists(facts, view)
        if not view.totals and not lists:
            return
        for call in facts.index.calls:
            func = call.func
            if type(func) is not cst.Attribute or func.attr.value != "step" or dotted(func.value) not in plateaus:
                continue
            arg = positional(call, 0) or kwarg(call, "metrics")
            if arg is None or facts.ranks.rank_guarded(call):
                continue
            value = arg.value if dotted(arg.value) in view.totals | lists else _metric_value(facts, arg.value)
            used = sorted({n for n in read_names(value) if n in view.totals or n in lists})
            if not used:
                continue
            what = ", ".join(used)
            if view.distributed:
                message = (
                    f"ReduceLROnPlateau stepped with this rank's {what} only: the ranks can lower their learning "
                    "rates at different epochs and their models drift apart; all-reduce it first"
                )
            else:
                message = (
                    f"after the conversion, ReduceLROnPlateau would be stepped with this rank's {what} only: the "
                    "ranks could lower their learning rates at different epochs and their models drift apart; "
                    "all-reduce it before the step"
                )
            why = _why_not(ctx, call, value, lists, view)
            if why is not None:
                ctx.report(call, f"{message} (no fix: {why})", fix=NONE)
                continue
            if ctx.report(call, message):
                _plan(ctx, call, arg.value, value, used[0], _op(facts, value, lists, view), view, lists)


def _plateau_schedulers(facts) -> set[str]:
    """What the script binds a ReduceLROnPlateau to (`scheduler`, `self.scheduler`)."""
    out = set()
    for assign in facts.index.assigns:
        value = assign.value
        if type(value) is cst.Call and (facts.names.call_qual(value) or dotted(value.func) or "").endswith(
            "ReduceLROnPlateau"
        ):
            out |= {t for target in assign.targets if (t := dotted(target.target)) is not None}
    return out


def _metric_value(facts, expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr`, or, for a name, the value of its one assignment before the step in the same function
    (`val_loss = total / len(loader)`)."""
    if type(expr) is not cst.Name:
        return expr
    index = facts.index
    scope = index.scope_of(expr)
    found = [
        a
        for a in index.assigns
        if index.scope_of(a) is scope and index.before(a, expr) and expr.value in binds(index.site(a).stmt)
    ]
    if len(found) == 1 and len(found[0].targets) == 1 and dotted(found[0].targets[0].target) == expr.value:
        return found[0].value
    return expr


def _why_not(ctx, call: cst.Call, value: cst.BaseExpression, lists: set[str], view) -> str | None:
    facts = ctx.facts
    stmt = facts.index.site(call).stmt
    if facts.index.in_one_line_suite(stmt) or not reached_alike(facts, stmt):
        return "not every rank reaches the step alike"
    if view.distributed and not reduces_on_cpu(ctx):
        return "the process group cannot be seen to reduce a CPU tensor"
    if _op(facts, value, lists, view) is None:
        return "the metric is not a mean or a total that can be reduced as it is"
    return None


def _op(facts, value: cst.BaseExpression, lists: set[str], view) -> str | None:
    """AVG or SUM for the metric `value`, or None when it cannot be told."""
    names = read_names(value)
    listed = names & lists
    totals = names & view.totals
    if listed and totals:
        return None
    if listed:
        means, whole = list_means(facts.index, value, lists)
        return AVG if means and whole else None
    ops = {
        reduction(facts.index, facts.index.parent.get(value), n, view.loader_names, view.bounds)
        for n in walk(value)
        if type(n) is cst.Name and n.value in totals
    }
    return ops.pop() if len(ops) == 1 else None


def _plan(ctx, call: cst.Call, arg: cst.BaseExpression, value, base: str, op: str | None, view, lists) -> None:
    """Totals read by the step itself are reduced as DDP409 reduces them (`avg_total = reduce_over_ranks(total,
    average=True)`, the step reading `avg_total / len(loader)`; one reduction serves a print of the same total
    just before); a name bound to a metric derived from totals has the totals reduced where it is derived
    (derived_metrics); a list's mean, or a name bound otherwise, is reduced whole before the step's statement
    (`avg_losses = reduce_over_ranks(np.mean(losses), average=True)`), and the step reads that."""
    plan = ctx.plan
    stmt = ctx.facts.index.site(call).stmt
    reducer = reducer_of(ctx)
    totals = {n.value for n in walk(arg) if type(n) is cst.Name} & view.totals
    if value is arg and totals:
        ops = reducer.reductions(call, totals, view.loader_names, stmt, view.bounds)
        if ops is not None:
            reducer.plan(call, ops, stmt)
            return
    if value is not arg and type(arg) is cst.Name and not {n for n in read_names(value) if n in lists}:
        for d in derived_shown(
            ctx.facts.index, arg, view.totals, derivations_of(ctx.facts.index, view.totals, view.loops, view.reduced)
        ):
            ops, why = derived_reductions(ctx, d, view)
            if why is None:  # reduced where it is derived, as DDP409 reduces a value shown
                reducer.plan_derived(d, ops)
                return
    means = list_means(ctx.facts.index, arg, lists)[0] if value is arg else []
    if means:
        for mean, name in means:
            reducer.plan_mean(mean, name, stmt)
        return
    fn = reducer.helper_at(stmt)
    base = arg.value if type(arg) is cst.Name else base
    name = plan.fresh(f"{'avg' if op == AVG else 'global'}_{base}")
    average = ", average=True" if op == AVG else ""
    plan.insert_before(stmt, plan.statements(f"{name} = {fn}({code_of(arg)}{average})"), Order.REDUCED_METRIC)
    plan.replace(arg, lambda n: cst.Name(name))


EXAMPLES = (
    fixes(
        """
        import numpy as np
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        for epoch in range(2):
            losses = []
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            scheduler.step(np.mean(losses))
        """,
        """
        import os

        import numpy as np
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)


        def reduce_over_ranks(value, average=False):
            \"\"\"`value` summed over every rank (averaged with `average=True`); `value` itself in a single process.\"\"\"
            if not DISTRIBUTED:
                return value
            total = torch.as_tensor(value, dtype=torch.float64).detach().cpu().clone()
            dist.all_reduce(total)
            if average:
                total /= WORLD_SIZE
            if isinstance(value, torch.Tensor):  # the same kind of value back: `.item()` still works on it
                return total.to(value.device, value.dtype if value.is_floating_point() else total.dtype)
            if type(value).__module__ == "numpy":
                return total.numpy()
            if isinstance(value, int) and not average:  # a count summed stays a whole number
                return int(total.item())
            return total.item() if total.dim() == 0 else total.tolist()


        for epoch in range(2):
            losses = []
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            avg_losses = reduce_over_ranks(np.mean(losses), average=True)
            scheduler.step(avg_losses)
        """,
        note="The epoch's mean training loss over a loader the conversion shards, averaged over the ranks:",
    ),
    reports(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        for epoch in range(2):
            losses = []
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
            scheduler.step(max(losses))
        """,
        note="The worst batch of this rank's shard: no reduction gives the run's value, so no fix:",
    ),
    clean(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        train = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
        val = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
        for epoch in range(2):
            for x, y in train:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
            val_loss = 0.0
            with torch.no_grad():
                for x, y in val:
                    val_loss += nn.functional.mse_loss(model(x), y).item()
            scheduler.step(val_loss / len(val))
        """,
        note="A validation loss over a loader that is not sharded is the same on every rank:",
    ),
)
