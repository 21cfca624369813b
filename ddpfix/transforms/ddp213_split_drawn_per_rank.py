"""DDP213: a dataset split at random with no seed: every rank splits it its own way."""

from __future__ import annotations

import libcst as cst

from ..analysis.random_batches import seeds_alike
from ..diagnostic import NONE
from ..edits import with_kwarg
from ..examples import clean, fixes, reports
from ..order import Order
from ..rule import Context, Rule
from ..syntax import kwarg, positional

# the splitting function -> (its name, its seed keyword, the position of that argument when passed positionally)
SPLITS = {
    "torch.utils.data.random_split": ("random_split", "generator", 2),
    "torch.utils.data.dataset.random_split": ("random_split", "generator", 2),
    "sklearn.model_selection.train_test_split": ("train_test_split", "random_state", None),
}
LOOPS = (cst.For, cst.While)
WHY = "under torchrun every rank splits the data its own way, so the ranks' shards overlap and a rank trains on samples another holds out"


class SplitDrawnPerRank(Rule):
    code = "DDP213"
    name = "split-drawn-per-rank"
    message = f"split at random with no seed: {WHY}"
    distributed_only = True
    docs = """
## What
A dataset split at random into parts (training, validation, test) with no seed for the split:
`torch.utils.data.random_split(dataset, lengths)` with no `generator`, or scikit-learn's
`train_test_split(...)` with no `random_state`, in a script that seeds no generator alike on
every rank (no `torch.manual_seed(0)`, `np.random.seed(...)`, `set_seed(...)` or other call named
`*seed*` whose argument does not depend on the rank).

## Why
Each process of `torchrun` starts its generators from a different state, so each rank draws its own
split. A `DistributedSampler` then hands every rank disjoint *positions* of its own training part:
the samples behind them are not disjoint. Some samples are trained on by two ranks and others by
none, and one rank trains on samples another rank holds out for validation, so the validation
numbers are not held out at all. `python train.py` shows nothing wrong, and each rank's indices
look disjoint (`ddpfix verify` compares the samples behind a `Subset`, and fails `shards`).

## Example
```python
train_set, val_set = random_split(dataset, [800, 200])
```
becomes
```python
split_generator = torch.Generator().manual_seed(0) if DISTRIBUTED else None  # every rank splits alike
train_set, val_set = random_split(dataset, [800, 200], generator=split_generator)
```
(`train_test_split(..., random_state=0 if DISTRIBUTED else None)` for scikit-learn's): under
torchrun every rank splits alike; a plain run splits as before, from the global generator (`None` is
the default).

## Fix safety
Safe: a plain run passes the default (`generator=None`, `random_state=None`) and splits exactly as
before. A split that runs more than once (in a loop, or in a function called in one: a new split per
fold or trial) is reported with no fix: one fixed seed would repeat the same split every time. So is
a split in a script that starts its own processes (`mp.spawn`), where whether the process group is up
at the split is decided at run time.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if not facts.training.trains or seeds_alike(facts):
            return
        no_fix = facts.launch.spawn_calls or facts.launch.process_starts
        for call in facts.names.calls_to(*SPLITS):
            name, keyword, at = SPLITS[facts.names.call_qual(call)]  # type: ignore[index]
            if kwarg(call, keyword) is not None or (at is not None and positional(call, at) is not None):
                continue
            message = f"{name} with no {keyword}: {WHY}"
            looped = _repeated(facts.index, call)
            if looped or no_fix:
                why = "a new split on each pass of a loop" if looped else "the script starts its own processes"
                ctx.report(call, f"{message}; seed it alike on every rank by hand ({why})", fix=NONE)
                continue
            if not ctx.report(call, message):
                continue
            flag = ctx.env("DISTRIBUTED")
            if keyword == "random_state":
                value = cst.parse_expression(f"0 if {flag} else None")
            else:  # a generator of its own, named on the line before, keeps the split's line short
                generator = ctx.plan.fresh("split_generator")
                ctx.plan.insert_before(
                    facts.index.site(call).stmt,
                    ctx.plan.statements(
                        "{g} = {torch}.Generator().manual_seed(0) if {flag} else None  # every rank splits alike",
                        g=generator,
                        torch=ctx.plan.ref("torch", "torch", style="import"),
                        flag=flag,
                    ),
                    order=Order.SPLIT_GENERATOR,
                )
                value = cst.Name(generator)
            ctx.plan.replace(call, lambda n, k=keyword, v=value: with_kwarg(n, k, v))


def _repeated(index, call: cst.Call) -> bool:
    """Does the split run more than once: in a loop, or in a function called in one (a split per fold
    or per trial, which one fixed seed would make the same split every time)?"""
    if any(isinstance(a, LOOPS) for a in index.ancestors(call)):
        return True
    func = index.enclosing(call, cst.FunctionDef)
    return isinstance(func, cst.FunctionDef) and any(
        any(isinstance(a, LOOPS) for a in index.ancestors(c)) for c in index.callers_of(func)
    )


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset, random_split

        x = torch.linspace(-1, 1, 100).unsqueeze(1)
        train_set, val_set = random_split(TensorDataset(x, 2 * x), [80, 20])
        loader = DataLoader(train_set, batch_size=10)
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for xb, yb in loader:
            loss = (model(xb) - yb).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import os

        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset, random_split

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        x = torch.linspace(-1, 1, 100).unsqueeze(1)
        split_generator = torch.Generator().manual_seed(0) if DISTRIBUTED else None  # every rank splits alike
        train_set, val_set = random_split(TensorDataset(x, 2 * x), [80, 20], generator=split_generator)
        loader = DataLoader(train_set, batch_size=10)
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for xb, yb in loader:
            loss = (model(xb) - yb).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Under torchrun every rank splits alike; a plain run splits as before:",
    ),
    clean(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset, random_split

        torch.manual_seed(0)
        x = torch.linspace(-1, 1, 100).unsqueeze(1)
        train_set, val_set = random_split(TensorDataset(x, 2 * x), [80, 20])
        loader = DataLoader(train_set, batch_size=10)
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for xb, yb in loader:
            loss = (model(xb) - yb).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="The global generator seeded alike on every rank: every rank draws the same split:",
    ),
    reports(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset, random_split

        x = torch.linspace(-1, 1, 100).unsqueeze(1)
        data = TensorDataset(x, 2 * x)
        model = nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for trial in range(3):
            train_set, val_set = random_split(data, [80, 20])
            for xb, yb in DataLoader(train_set, batch_size=10):
                loss = (model(xb) - yb).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="A new split on each pass of a loop: one fixed seed would repeat one split, so no fix:",
    ),
)
