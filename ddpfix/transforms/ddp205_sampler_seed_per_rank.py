"""DDP205: a DistributedSampler seed that differs per rank: the shards overlap and miss samples."""

from __future__ import annotations

import libcst as cst

from ..edits import without_kwarg
from ..examples import clean, fixes, reports
from ..rule import Context, Rule
from ..syntax import dotted, kwarg


class SamplerSeedPerRank(Rule):
    code = "DDP205"
    name = "sampler-seed-per-rank"
    message = "DistributedSampler seed depends on the rank: every rank shuffles differently, so shards overlap and samples are skipped"
    docs = """
## What
`DistributedSampler(ds, seed=seed + rank)`, or a `seed=` variable computed from the rank.

## Why
Each rank shuffles the whole index list with `seed + epoch` and then takes every N-th index of
*its* permutation. PyTorch's docs: the seed "should be identical across all processes in the
distributed group". With a per-rank seed the permutations differ, so the shards overlap (some
samples are trained on twice per epoch) and others are never seen. Nothing fails; accuracy suffers.

## Example
```python
sampler = DistributedSampler(dataset, seed=args.seed + RANK)
```
becomes
```python
sampler = DistributedSampler(dataset, seed=args.seed)
```
A per-rank offset belongs to augmentation and dropout RNG (`torch.manual_seed(args.seed + RANK)`),
never to the sampler. A seed variable shared with `torch.manual_seed` keeps its rank offset there;
only the sampler gets the rank-free part.

## Fix safety
Safe: a plain run has rank 0, so its seed is unchanged. A seed whose rank term cannot be separated
(`seed=hash(rank)`) gets the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.data.sampler_calls:
            seed = kwarg(call, "seed")
            if seed is None:
                continue
            expr = seed.value
            source = expr
            name = dotted(expr)
            if name is not None and not facts.ranks.is_rank(expr):
                source = _value_of(facts, name, call)  # seed = args.seed + rank; DistributedSampler(..., seed=seed)
                if source is None:
                    continue
            if not facts.ranks.mentions_rank(source):
                continue
            base = _without_rank(facts, source)
            if base is False:
                ctx.report(
                    seed, "DistributedSampler seed depends on the rank: use the same seed on every rank", fix="none"
                )
                continue
            if source is not expr and base is not None and not isinstance(base, (cst.Name, cst.Attribute, cst.Integer)):
                ctx.report(seed, f"seed {name} depends on the rank: give the sampler the rank-free part", fix="none")
                continue
            if not ctx.report(seed):
                continue
            if base is None:
                ctx.plan.replace(call, lambda n: without_kwarg(n, "seed"))
            else:
                ctx.plan.replace(seed, lambda n, b=base: n.with_changes(value=b))


def _value_of(facts, name: str, at: cst.CSTNode) -> cst.BaseExpression | None:
    """The value `name` last had before `at`, from a plain assignment in the same scope."""
    return facts.names.value_before(facts.index.scope_of(at), name, at)


def _without_rank(facts, expr: cst.BaseExpression):
    """`base + rank` -> base; `rank` -> None (no seed); False when the rank term is not separable."""
    if not facts.ranks.mentions_rank(expr):
        return expr
    if isinstance(expr, (cst.Name, cst.Attribute)) or (
        isinstance(expr, cst.Call) and (facts.names.call_qual(expr) or "").endswith("rank")
    ):
        return None  # the whole seed is the rank: the default seed is the same everywhere
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.BitXor)):
        left, right = facts.ranks.mentions_rank(expr.left), facts.ranks.mentions_rank(expr.right)
        if left and right:
            return False
        if right:
            if isinstance(expr.right, cst.BinaryOperation) and not isinstance(expr.right.operator, cst.Multiply):
                return False
            return _unparen(expr.left)
        if isinstance(expr.operator, cst.Subtract):
            return False  # base - (rank ...) ... rank - base: no rank-free part worth keeping
        inner = _without_rank(facts, expr.left) if isinstance(expr.left, cst.BinaryOperation) else None
        if isinstance(expr.left, cst.BinaryOperation) and inner not in (None, False):
            return False
        return _unparen(expr.right)
    return False


def _unparen(expr: cst.BaseExpression) -> cst.BaseExpression:
    return expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        SEED = 17
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.manual_seed(SEED + rank)
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, seed=SEED + rank)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(nn.functional.dropout(x)), y)
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

        SEED = 17
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        torch.manual_seed(SEED + rank)
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, seed=SEED)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(nn.functional.dropout(x)), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="The sampler gets the rank-free seed; dropout keeps its per-rank one:",
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
        rank = dist.get_rank()
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, seed=hash(("run-3", rank)) % 2**31)
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
        message="DistributedSampler seed depends on the rank: use the same seed on every rank",
        note="Reported without a fix: no rank-free part to keep; pick one seed for every rank:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        SEED = 17
        dist.init_process_group("gloo")
        torch.manual_seed(SEED + dist.get_rank())
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, seed=SEED)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(nn.functional.dropout(x)), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note="A per-rank seed for the RNG of dropout, one shared seed for the sampler:",
    ),
)
