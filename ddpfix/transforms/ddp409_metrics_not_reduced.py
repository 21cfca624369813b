"""DDP409: a per-rank loss or accuracy logged as if it were global."""

from __future__ import annotations

import libcst as cst

from ..analysis.imported_meters import imported_meter_classes
from ..analysis.meters import meter_classes, shown_meters
from ..derived_metrics import derivations_of, derived_reductions, derived_shown
from ..examples import clean, fixes, reports
from ..metric_reduce import reducer_of
from ..rule import NONE, Context, Rule
from ..sharded_totals import appended_lists, list_means, reduces_on_cpu, shard_view
from ..syntax import dotted, walk


class MetricsNotReduced(Rule):
    code = "DDP409"
    name = "metrics-not-reduced"
    reads = frozenset({"cut", "hoisted"})
    message = "metric printed on rank 0 covers rank 0's shard only: all-reduce it first"
    docs = """
## What
In a DDP script that shards its data with a `DistributedSampler`, a total accumulated over a sharded
loader (`correct += ...`) printed or logged from rank 0 without ever reaching a collective. A total
that does reach one is reduced: passed to `all_reduce`/`reduce`/`all_gather` (also inside a tensor:
`stats = torch.tensor([correct, total]); dist.all_reduce(stats)`) or to a helper of the script or of
its own modules that issues one (`utils.reduce_value(total)`). Totals over an unsharded loader
(no sampler, a `SequentialSampler`) are global already; so is a count of steps (`global_step += 1`,
the same on every rank) and a sum of values the ranks reduced first (`dist.all_reduce(loss)`, then
`epoch_loss += loss.item()`).

On a script that is not distributed yet, the same shape over a training loader that the conversion
shards (DDP201), or over batches the conversion cuts by rank (DDP209), is reported too, in the words
of what the conversion would do, and fixed: the total is reduced over the ranks right before the
statement that shows it.

So is the mean of a list such a loop appends this rank's values to (`losses.append(loss.item())`,
then `np.mean(losses)`, `statistics.mean(losses)` or `sum(losses) / len(losses)` shown); another read
of the list (`losses[-1]`, `len(losses)`) is not a metric of the shard and is left alone.

Totals kept in a *meter* are reported the same way: an instance of a class of the script, or of a module
of its own it imports (`from utils import AverageMeter`; the class is read there, the fix is made in
the script), whose method accumulates into its own attributes (`self.sum += value * n; self.count +=
n`), updated inside a loop
over a sharded loader (also a `DataLoader` subclass that builds its own `DistributedSampler`, looped
over by the class it is handed to), and then shown: read by a print or log call in the same function,
or returned by the function that fills it (`return train_loss, train_acc`) and shown by its caller.

## Why
With a `DistributedSampler` each rank sees 1/N of the data; rank 0's running loss or accuracy is
computed over its shard alone, so the number in the log is not the number the single-process run
reports.

## Example
```python
if rank == 0:
    print(f"val acc {correct / total:.3f}")
```
becomes
```python
stats = torch.tensor([correct, total], device=device, dtype=torch.float64)
dist.all_reduce(stats)
if rank == 0:
    print(f"val acc {stats[0] / stats[1]:.3f}")
```

On a script ddpfix converts, the fix reduces each shown total just before the statement that shows
it, with one helper that is the identity in a single process:
```python
for i, (x, y) in enumerate(loader, 1):
    ...
    running_loss += loss.item()
print(f"loss {running_loss / i:.4f}")
```
becomes
```python
avg_running_loss = reduce_over_ranks(running_loss, average=True)
if RANK == 0:
    print(f"loss {avg_running_loss / i:.4f}")
```
A total divided by a count that is per rank (the step index, `len(loader)`, `len(loader.sampler)`,
which is this rank's share once the sampler is a DistributedSampler, another total, a fixed number of
steps) is averaged over the ranks; one shown as it is, divided by the size of a dataset (the same on
every rank), or by the whole run's count of batches (`len(loader.dataset) / loader.batch_size`, or the
bound a loop cut by rank ranges over: `cost / num_batches` after `for k in range(RANK, num_batches,
WORLD_SIZE)`), is summed. The two totals of a
ratio (`100. * correct / total`) take the same reduction, which leaves the ratio the run's: summed
where either is also shown as it is (`(%d/%d)` of `correct, total`), else averaged; where the sides
need different ones, it is reported without a fix. So is a dict of totals (`losses[key] +=
float(v)` into `losses = {k: 0 for k in keys}`): `reduce_over_ranks` all-reduces a number, a list or a
tensor. A total the script
divides in place before it shows it (`train_loss = train_loss / len(train_loader.sampler)`, `total /=
len(loader.dataset)`) is reduced by that division the same way. A value the script derives from
such totals before it shows it (`epoch_loss = running_loss / len(loader.dataset)`, then
`print(epoch_loss)`) has the totals reduced just before the statement that derives it, which then
reads them reduced, so the value is the run's wherever it is read next (the print, a `return`, a
scheduler's step); that is done where the derivation is the last binding of the name before the
statement that shows it, in the same function and in a block that holds that statement, and a value
derived inside the loop that accumulates, or in one branch of an `if`, is reported with no fix. A
value computed beside one the script reduced itself (`tps = global_tokens / elapsed`, `global_tokens`
read from an all-reduced tensor) is its own global figure. Wherever a total is shown, directly or
through a value derived from it, only totals a sharded loop of the same function accumulates count:
`test()`'s own `correct` over the whole test set is not the `correct` that `train()` sums over its
shard, and summing it over the ranks would show it multiplied by their number. On a
script ddpfix converts, a value a function of the script returns from its totals (`return running_loss
/ len(loader.dataset), accuracy`, or a value it derives from them) and its caller shows
(`train_loss, train_acc = train_epoch(...)`, then a print) has the totals reduced in that function,
before the `return` (or the derivation), so it returns the run's value to every caller; with no fix
where a caller does not reach its call alike on every rank, or also hands the function a loader that
is not sharded (`evaluate(model, val_loader)` beside `evaluate(model, train_loader)`), or calls it in
the statement that shows it (`print(evaluate(model, train_loader))`, which the conversion guards to
rank 0). A loader DDP201 leaves to shard by
hand (a `SubsetRandomSampler` of its own) is no shard: totals over it are not reduced. A script
that is distributed already gets the same fix, placed before the rank-0 guard around the statement,
where its process group can reduce a CPU tensor (backend left to torch, gloo, or
`"cpu:gloo,cuda:nccl"`).

A list's mean is averaged over the ranks as a whole, just before the statement that shows it
(every rank's shard has as many batches), and read from there:
```python
    avg_losses = reduce_over_ranks(np.mean(losses), average=True)
    if RANK == 0:
        print(f"epoch {epoch} loss {avg_losses:.4f}")
```

A meter has every attribute its class accumulates with `+=` summed over the ranks and put back, once,
before the first statement that shows it, so that what the class computes from them (`average =
sum / count`, its `__str__`) is the run's value:
```python
for epoch in range(1, epochs + 1):
    train_loss = train(model, loader, optimizer)  # an Average() updated over the loader, returned
    print(f"epoch {epoch} loss {train_loss.average:.4f}")
```
becomes
```python
for epoch in range(1, epochs + 1):
    train_loss = train(model, loader, optimizer)
    train_loss.sum = reduce_over_ranks(train_loss.sum)
    train_loss.count = reduce_over_ranks(train_loss.count)
    if RANK == 0:
        print(f"epoch {epoch} loss {train_loss.average:.4f}")
```
A meter that keeps accumulating over a loop around the statement that shows it (a running average
printed every few steps inside the loop that updates it, or one made before the epoch loop) is shown
through a copy whose totals are reduced, so the meter itself goes on counting this rank's shard:
```python
        if i % print_freq == 0:
            global_losses = copy.copy(losses)
            global_losses.sum = reduce_over_ranks(losses.sum)
            global_losses.count = reduce_over_ranks(losses.count)
            global_losses.avg = global_losses.sum / global_losses.count
            if RANK == 0:
                print(f"[{i}] loss {global_losses.val:.4f} ({global_losses.avg:.4f})")
```
(`val`, the last value given, stays rank 0's.)

## Fix safety
Safe on a script ddpfix converts: `python train.py` prints what it printed (the helper returns the
value itself when not distributed), and under torchrun the number covers every rank's shard. No fix
where the statement is not reached alike by every rank (inside a `while`, or under a condition that
reads what the loop changes, such as `if loss < best:`): a reduction there would wait for ranks that
never come. On a script that is distributed already, none where the guard around the statement is
itself rank-dependent or not reached by every rank, or where the backend is NCCL alone or set up
out of sight (the helper reduces on the CPU).

A meter is reduced in place only where that gives the run's value and happens once per instance: its
class keeps no other state as it updates (what it computes from its totals alone, such as an
`AverageMeter`'s `self.avg = self.sum / self.count` after its `+=`, is computed again from the reduced
totals right after them; one computed before the totals move is kept state; the last value given,
`self.val = val`, is no total and stays as it is; anything else it keeps, such as `self.peak =
max(self.peak, val)`, leaves the meter reported with no fix), its totals start as numbers in
`__init__` (or in a method it calls, `self.reset()`), and, reduced in place, it is made anew inside
every loop around the statement that shows it, it is not updated after it is shown, and a second
statement showing it follows the first in the same block. One that keeps accumulating is shown
through a reduced copy instead (reducing it in place each epoch would count the earlier epochs once
per rank); a copy is made before each statement that shows it, one for consecutive ones with no
update between them. A class that issues a collective itself is
taken to reduce its own totals.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        view = shard_view(ctx)
        if view is None:
            return
        distributed, loops, reduced, sharded = view.distributed, view.loops, view.reduced, view.totals
        classes = meter_classes(facts.index, facts.ranks.collectives_in)
        classes.update(imported_meter_classes(facts, classes))
        classes = {k: c for k, c in classes.items() if not c.reduces}
        meters = shown_meters(facts.index, loops, classes, _shows, reduced | set(facts.names.aliases))
        lists = appended_lists(facts, view)
        if not sharded and not meters and not lists:
            return
        ranks = facts.ranks
        reducer = reducer_of(ctx)
        bounds, loader_names = view.bounds, view.loader_names
        candidates = derivations_of(facts.index, sharded, loops, reduced) if sharded else None
        follow = None if distributed else (view.loader_names, view.sharded_loaders)  # returned values too
        hoisted = frozenset(id(c) for c in ctx.plan.hoisted)  # calls DDP406 takes out of the print it guards
        for call in facts.index.calls:
            if not _shows(call):
                continue
            soon = _guarded_in_this_pass(ctx, call)  # DDP406 guards it to rank 0 in this pass
            if distributed and not (
                soon or ranks.rank_guarded(call) or (dotted(call.func) == "print" and ranks.print_silenced(call))
            ):
                continue
            used = {n.value for n in walk(call) if isinstance(n, cst.Name)} & sharded
            used = candidates.own(facts.index, call, used) if candidates is not None else used
            shown = [m for m in meters.get(call, []) if m.name not in reduced]
            means = list_means(facts.index, call, lists)[0] if lists else []
            derived = (
                derived_shown(facts.index, call, sharded, candidates, reduced, follow, hoisted) if candidates else []
            )
            if not used and not shown and not means and not derived:
                continue
            names = ", ".join(
                sorted(used | {m.name for m in shown} | {name for _, name in means} | {d.name for d in derived})
            )
            verb, done = ("sum", "summed") if used or shown or derived else ("average", "averaged")  # (a list's mean)
            if distributed:
                # reduced before the rank-0 guard around the statement (every rank reaches it there), or
                # before the statement itself where a silenced print runs on every rank
                at = (
                    (facts.index.site(call).stmt if soon else _reached_by_every_rank(facts, call))
                    if reduces_on_cpu(ctx)
                    else None
                )
                message = f"{names} {done} over this rank's shard only, logged as if global: all-reduce it first"
            else:
                at = facts.index.site(call).stmt
                message = (
                    f"after the conversion, {names} would {verb} this rank's shard only and be logged as if global: "
                    "all-reduce it before it is shown"
                )
            ops = (reducer.reductions(call, used, loader_names, at, bounds) if used else {}) if at is not None else None
            why = reducer.meter_problem(shown, at) if shown and at is not None and ops is not None else None
            if ops is None and used and at is not None:
                why = reducer.problem
            if why is None and means and at is not None and ops is not None:
                why = reducer.mean_problem(at)
            derived_ops = []
            for d in derived if why is None and ops is not None else ():
                d_ops, why = derived_reductions(ctx, d, view)
                derived_ops.append((d, d_ops))
                if why is not None:
                    break
            if why is not None:
                message += f" (no fix: {why})"
            if ctx.report(call, message, fix=None if ops is not None and why is None else NONE):
                if used:
                    reducer.plan(call, ops, at)  # type: ignore[arg-type]
                reducer.plan_meters(shown, at, call)  # type: ignore[arg-type]
                for mean, name in means:
                    reducer.plan_mean(mean, name, at)  # type: ignore[arg-type]
                for d, d_ops in derived_ops:
                    reducer.plan_derived(d, d_ops)


def _shows(call: cst.Call) -> bool:
    """Does `call` print or log what it is given?"""
    name = dotted(call.func) or ""
    return name == "print" or name.endswith((".info", ".log", ".add_scalar"))


def _guarded_in_this_pass(ctx: Context, call: cst.Call) -> bool:
    """Is the statement of `call` one that an earlier rule of this pass (DDP406) guards to rank 0, or
    would guard in a fix run?"""
    stmt = ctx.facts.index.site(call).stmt
    return stmt in ctx.plan.guards or stmt in ctx.plan.unmade_guards


def _reached_by_every_rank(facts, call: cst.Call) -> cst.CSTNode | None:
    """Where a reduction of what `call` shows on rank 0 can go: before the `if` that makes it rank 0's
    (`if RANK == 0: print(...)`, itself reached by every rank), or before the statement of a print
    that every rank runs and all but one silence; None when there is no such place."""
    ranks = facts.ranks
    guard = ranks.guard_of(call)
    if type(guard) is cst.If:
        return None if ranks.rank_guarded(guard) else guard
    if guard is None and ranks.print_silenced(call):
        return facts.index.site(call).stmt
    return None


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, shuffle=True)
        model = nn.Linear(4, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            total = 0.0
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(x)
            print(f"epoch {epoch} loss {total / len(ds):.4f}")
        """,
        """
        import os

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
            total = 0.0
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * len(x)
            global_total = reduce_over_ranks(total)
            print(f"epoch {epoch} loss {global_total / len(ds):.4f}")
        """,
        note="A per-sample sum divided by the dataset's size, summed over the ranks before it is printed:",
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
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if dist.get_rank() == 0:
            print(f"mean loss {total / len(loader):.4f}")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()


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


        avg_total = reduce_over_ranks(total, average=True)
        if dist.get_rank() == 0:
            print(f"mean loss {avg_total / len(loader):.4f}")
        """,
        note="Rank 0's loss over its own shard, printed as the run's: averaged over the ranks before the guard:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        dist.init_process_group("nccl")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        total = 0.0
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
        if dist.get_rank() == 0:
            print(f"mean loss {total / len(loader):.4f}")
        """,
        message="total summed over this rank's shard only, logged as if global: all-reduce it first",
        note=(
            "Rank 0's loss over its own shard, printed as the run's; reported only, for NCCL alone cannot "
            "reduce the CPU value the fix would:"
        ),
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler


        class PeakMeter:
            def __init__(self):
                self.sum = self.count = self.peak = 0

            def update(self, val, n=1):
                self.sum += val * n
                self.count += n
                self.peak = max(self.peak, val)


        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        loader = DataLoader(ds, batch_size=8, sampler=DistributedSampler(ds))
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        losses = PeakMeter()
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.update(loss.item(), len(x))
        if dist.get_rank() == 0:
            print(f"mean loss {losses.sum / losses.count:.4f}, peak {losses.peak:.4f}")
        """,
        message=(
            "losses summed over this rank's shard only, logged as if global: all-reduce it first (no fix: "
            "PeakMeter also stores self.peak as it updates, which reducing its totals would leave as this rank's)"
        ),
        note=(
            "Rank 0's meter over its own shard, printed as the run's; reported only, for the peak the meter keeps "
            "as it updates is no total, and would stay rank 0's if its totals were reduced:"
        ),
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
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        total = torch.zeros(())
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)
        if dist.get_rank() == 0:
            print(f"mean loss {total.item() / (len(loader) * dist.get_world_size()):.4f}")
        """,
        note="Summed over every rank before rank 0 prints it:",
    ),
)
