"""DDP212: a loader every rank iterates whole, while what is summed over it is reduced over the ranks."""

from __future__ import annotations

import libcst as cst

from ..analysis.summed_streams import summed_loaders
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..sampler_edit import add_sampler, is_iterable_dataset, taken_per_rank
from ..syntax import kwarg, positional


class SummedOnEveryRank(Rule):
    code = "DDP212"
    name = "summed-on-every-rank"
    message = (
        "evaluation DataLoader left whole on every rank while its sums are all-reduced: every sample counts "
        "WORLD_SIZE times"
    )
    requires = ("DDP001",)
    docs = """
## What
A DataLoader that no training loop draws from (an evaluation loader, without a sampler), iterated by a
loop that adds into a name (`correct += (pred == y).sum()`), after which that name is handed to a
collective: `dist.all_reduce(correct)`, or a helper that issues one (`reduce_value(correct,
average=False)`). The loop runs where the loader is built, in a function of the script it is handed
to, or in a function or method of the script's own modules (`evaluate(model, val_loader, device)` of
a helper module written for several processes, whose reduction does nothing in a single process).

Only a reduction that sums is one: `dist.all_reduce` with no other `op`, or a helper that divides what
it is handed by nothing (`reduce_value(x, average=False)`, where `if average: value /= world_size`).
A value divided after the reduction by anything but a count of samples (`/ world_size`, `/ nprocs`,
`/ total` of another reduced count) may be an average over the ranks, which whole-set values leave
right: not reported. A division by `len(...)` (`correct / len(val_set)`) is a mean over the data, and
the sum before it is still doubled.

## Why
Every rank iterates the whole loader, so each rank's sum is already the total; the all-reduce then
adds the ranks' totals: the metric is WORLD_SIZE times the single-process number (an accuracy of 1.2
on 2 ranks). Nothing fails. A helper that reduces over the ranks expects each rank to see its own
share of the data.

## Example
```python
val_loader = DataLoader(val_set, batch_size=64, shuffle=False)
...
correct = evaluate(model, val_loader)   # sums under no_grad, then dist.all_reduce(correct)
print(correct / len(val_set))
```
becomes
```python
val_sampler = range(RANK, len(val_set), WORLD_SIZE) if DISTRIBUTED else None  # every sample on one rank
val_loader = DataLoader(val_set, batch_size=64, shuffle=False, sampler=val_sampler)
```

## Fix safety
Safe: a single process gets no sampler (`None`) and iterates the loader as before. Under torchrun each
rank sums its own samples (every `WORLD_SIZE`-th one from its rank on) and the reduction adds the
shares into exactly the single-process total: no sample is repeated, as `DistributedSampler` would
repeat a few to make the shards equal (DDP206). Shards may then differ by one sample, which is safe
only where the loop runs under `torch.no_grad()` (or `inference_mode`) and issues no collective of its
own at each batch: a forward of the DDP wrapper there broadcasts buffers only at the first batch.
Elsewhere, and for a loader whose arguments cannot be read here or over an IterableDataset, the
finding says what to do and nothing is changed.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for summed in summed_loaders(facts):
            loader = summed.loader
            call = loader.site.node
            assert isinstance(call, cst.Call)
            if kwarg(call, "sampler") is not None or kwarg(call, "batch_sampler") is not None:
                continue  # its own sampler shards it (or not: DDP206 reads a padding DistributedSampler)
            ds_arg = positional(call, 0) or kwarg(call, "dataset")
            if ds_arg is not None and taken_per_rank(facts, ds_arg.value):
                continue  # each rank's own part already
            message = (
                f"evaluation DataLoader {loader.target} left whole on every rank while {summed.where} all-reduces "
                "what it sums over it: every sample counts WORLD_SIZE times"
            )
            contents = facts.data.kwargs_of(call)
            if contents is not None or ds_arg is None or is_iterable_dataset(facts, ds_arg.value):
                ctx.report(call, f"{message}; give it each rank's share of the samples by hand", fix="none")
            elif not summed.quiet:
                ctx.report(call, f"{message}; {UNEVEN}", fix="none")
            elif ctx.report(call, f"{message}; each rank now sums its own share"):
                add_sampler(ctx, loader, ds_arg, exact=True)


UNEVEN = (
    "its loop runs with gradients on or issues a collective at each batch, so shards that differ by a sample "
    "could leave a rank waiting: shard it by hand (DistributedSampler(dataset, shuffle=False) gives equal "
    "shards, and repeats a few samples when the world size does not divide the set)"
)


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def count_correct(model, loader):
            correct = torch.zeros(1)
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum()
            if dist.is_available() and dist.is_initialized():
                dist.all_reduce(correct)
            return correct.item()


        train_set = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
        val_set = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
        train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
        val_loader = DataLoader(val_set, batch_size=8)
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            print(epoch, count_correct(model, val_loader) / len(val_set))
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        if DISTRIBUTED:
            if torch.cuda.is_available():
                torch.cuda.set_device(LOCAL_RANK)
            dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")


        def count_correct(model, loader):
            correct = torch.zeros(1)
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum()
            if dist.is_available() and dist.is_initialized():
                dist.all_reduce(correct)
            return correct.item()


        train_set = TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,)))
        val_set = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
        train_loader = DataLoader(train_set, batch_size=8, shuffle=True)
        val_sampler = range(RANK, len(val_set), WORLD_SIZE) if DISTRIBUTED else None  # every sample on one rank
        val_loader = DataLoader(val_set, batch_size=8, sampler=val_sampler)
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            print(epoch, count_correct(model, val_loader) / len(val_set))

        if DISTRIBUTED:
            dist.destroy_process_group()
        """,
        note="count_correct() all-reduces the count it sums under no_grad: each rank sums its own samples",
    ),
    clean(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset


        def count_correct(model, loader):
            correct = 0
            with torch.no_grad():
                for x, y in loader:
                    correct += (model(x).argmax(1) == y).sum().item()
            return correct


        train_loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randint(0, 3, (64,))), batch_size=8)
        val_set = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))
        val_loader = DataLoader(val_set, batch_size=8)
        model = nn.Linear(4, 3)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            for x, y in train_loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()
            print(epoch, count_correct(model, val_loader) / len(val_set))
        """,
        note="a count over the whole validation set on every rank, never all-reduced: the single-process number",
    ),
)
