"""DDP005: the global RANK used as a device, or LOCAL_RANK used to pick the one writer / the shard."""

from __future__ import annotations

import libcst as cst

from ..analysis.ranks import Ranks
from ..edits import without_kwarg
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import calls_in, dotted, kwarg, method_name, positional, walk

SIDE_EFFECTS = ("torch.save", "print", "logging.", "SummaryWriter", "wandb.")


class LocalVsGlobalRank(Rule):
    code = "DDP005"
    name = "local-vs-global-rank"
    message = "local and global rank mixed up: devices follow LOCAL_RANK, writers and shards follow RANK"
    docs = """
## What
The global rank used as a CUDA device (`torch.cuda.set_device(rank)`, `.to(rank)`,
`device_ids=[rank]`, `output_device=rank`), or the local rank used where the global one is meant: the single writer
(`if local_rank == 0: torch.save(...)`) or the sampler's shard (`DistributedSampler(ds, rank=local_rank)`).

## Why
On one node RANK == LOCAL_RANK, so this only breaks multi-node: `set_device(rank)` gives
`CUDA error: invalid device ordinal` on the second node; `local_rank == 0` elects one writer per
node, which clobber each other on a shared filesystem; a sampler keyed on the local rank makes every
node train the same shard.

## Example
```python
torch.cuda.set_device(rank)
...
if local_rank == 0:
    torch.save(model.module.state_dict(), "ckpt.pt")
```
becomes
```python
torch.cuda.set_device(local_rank)
...
if RANK == 0:
    torch.save(model.module.state_dict(), "ckpt.pt")
```

## Fix safety
Safe for names recognised as ranks (environment variables, `dist.get_rank()`, argparse
`--local_rank`); the sampler's `rank=`/`num_replicas=` are dropped so the process group decides.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        for expr in _device_uses(facts):
            if ranks.is_global_rank(expr):
                if ctx.report(
                    expr,
                    f"the global rank `{dotted(expr)}` picks the GPU: use the local rank (device ordinals restart on every node)",
                ):
                    local = _local_name(ctx, expr)
                    ctx.plan.replace(expr, lambda n, local=local: cst.parse_expression(local))
        for node in facts.index.ifs:
            if not _has_side_effect(facts, node.body):
                continue
            for comp in _local_rank_zero_tests(ranks, node.test):
                if ctx.report(comp, "the local rank elects the writer: one per node; use the global rank"):
                    cond = ctx.rank0(node)
                    ctx.plan.replace(
                        comp, lambda n, c=cond: cst.parse_expression(c).with_changes(lpar=n.lpar, rpar=n.rpar)
                    )
        for call in facts.data.sampler_calls:
            arg = kwarg(call, "rank")
            if arg is not None and ranks.is_local_rank(arg.value):
                if ctx.report(arg, "DistributedSampler keyed on the local rank: every node trains the same shard"):
                    ctx.plan.replace(call, lambda n: without_kwarg(without_kwarg(n, "rank"), "num_replicas"))


def _device_uses(facts):
    for call in facts.index.calls:
        q = facts.names.call_qual(call) or ""
        if q == "torch.cuda.set_device" or method_name(call) in ("to", "cuda"):
            arg = positional(call, 0)
            if arg is not None and isinstance(arg.value, (cst.Name, cst.Attribute)):
                yield arg.value
        if q == "torch.device" and len(call.args) == 2 and isinstance(call.args[1].value, (cst.Name, cst.Attribute)):
            yield call.args[1].value
        ids = kwarg(call, "device_ids")
        if ids is not None and isinstance(ids.value, cst.List) and len(ids.value.elements) == 1:
            el = ids.value.elements[0].value
            if isinstance(el, (cst.Name, cst.Attribute)):
                yield el
        out = kwarg(call, "output_device")
        if ids is not None and out is not None and isinstance(out.value, (cst.Name, cst.Attribute)):
            yield out.value


def _local_name(ctx: Context, at: cst.CSTNode) -> str:
    facts = ctx.facts
    for name in ("local_rank", "args.local_rank"):
        if facts.names.assignments(facts.index.scope_of(at), name):
            return name
    func = facts.index.enclosing(at, cst.FunctionDef)
    if isinstance(func, cst.FunctionDef) and any(p.name.value == "local_rank" for p in func.params.params):
        return "local_rank"
    return ctx.env("LOCAL_RANK")


def _has_side_effect(facts, body, depth: int = 0) -> bool:
    """Does `body` write files or print/log (directly or through a helper of this file)?"""
    for call in calls_in(body):
        callee = facts.index.callee_of(call)
        if callee is not None and depth < 2 and _has_side_effect(facts, callee.body, depth + 1):
            return True
        q = facts.names.call_qual(call) or dotted(call.func) or ""
        if q in ("torch.save", "print") or q.startswith(("logging.", "wandb.")) or "SummaryWriter" in q:
            return True
        if method_name(call) in ("info", "warning", "add_scalar", "save"):
            return True
    return False


def _local_rank_zero_tests(ranks: Ranks, test: cst.BaseExpression) -> list[cst.Comparison]:
    """`local_rank == 0`, `args.local_rank in [-1, 0]`, ... inside an if-test (possibly within and/or)."""
    out = []
    for n in walk(test):
        if isinstance(n, cst.Comparison) and len(n.comparisons) == 1 and ranks.is_local_rank(n.left):
            if ranks.takes(n) == (True, False) or ranks.takes(n)[0] is True:
                out.append(n)
    return out


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if local_rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="GPUs follow the local rank, the one writer the global rank:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="Each rank in its place:",
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

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, num_replicas=dist.get_world_size(), rank=local_rank)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
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

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note=(
            "A sampler keyed on the local rank gives every node the same shard; the process group knows the right one:"
        ),
    ),
)
