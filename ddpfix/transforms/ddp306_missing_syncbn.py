"""DDP306: BatchNorm layers trained with DDP but never converted to SyncBatchNorm."""

from __future__ import annotations

import libcst as cst

from ..analysis.library_models import builds_batchnorm
from ..edits import cuda_test
from ..examples import clean, fixes, reports
from ..rule import UNSAFE, Context, Order, Rule
from ..syntax import assigned_value, dotted, kwarg, positional, string_value


class MissingSyncBatchNorm(Rule):
    code = "DDP306"
    name = "missing-syncbn"
    message = "BatchNorm statistics stay per rank: convert the model with SyncBatchNorm before the DDP wrap"
    fix = UNSAFE
    requires = ("DDP001", "DDP301")
    docs = """
## What
A model with BatchNorm layers trained under DDP without `nn.SyncBatchNorm.convert_sync_batchnorm`.

A model built by torchvision or timm counts when the builder's name says it has BatchNorm
(`torchvision.models.resnet50()`, `timm.create_model("efficientnet_b0")`); one whose name is decided at
run time (`timm.create_model(args.model)`) or that has none (`vit_b_16`, detection models with frozen
BatchNorm) is not reported.

## Why
Each rank normalises with the statistics of its own (smaller) batch; DDP only broadcasts rank 0's
running buffers. With small per-GPU batches this hurts accuracy.

## Example
```python
raw_model = model
if DISTRIBUTED:
    model = DDP(model, ...)
```
becomes
```python
if DISTRIBUTED and device.type == "cuda":
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, ...)
```

## Fix safety
Unsafe: it changes the numerics of training (that is the point), and SyncBatchNorm runs on CUDA
only (`ValueError: SyncBatchNorm expected input tensor to be on GPU`), hence the device test.
Applied with `--unsafe-fixes`. Models kept in a list (`nets`) are converted one by one, each on
CUDA only: `nets = [nn.SyncBatchNorm.convert_sync_batchnorm(net) if ... else net for net in nets]`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if facts.models.syncbn_calls or not facts.models.trained:
            return
        bn = facts.models.batchnorm_calls[0] if facts.models.batchnorm_calls else None
        if bn is None:  # a model of a library: its builder's name says whether it has BatchNorm
            value = assigned_value(facts.models.trained[0].definition.stmt)
            if not isinstance(value, cst.Call):
                return
            first = positional(value, 0) or kwarg(value, "model_name")
            if not builds_batchnorm(facts.names.call_qual(value) or "", first and string_value(first.value)):
                return
            bn = value
        wrapped_inline = [m for m in facts.models.trained if _built_inside_wrap(facts, m)]
        if wrapped_inline:
            ctx.report(
                bn, self.message + " (the model is built inside DDP(...): convert it before wrapping)", fix="none"
            )
            return
        if not ctx.report(bn):
            return
        nn = ctx.plan.ref("torch.nn", "nn", style="import", via_parent=True)
        for model in facts.models.trained:
            existing = facts.models.wrapped(model)
            if existing is not None:
                anchor, where = facts.index.site(existing).stmt, "before"
            else:
                anchor, where = facts.models.wrap_point(model).anchor, "after"
            template = """
                if {D} and {cuda}:
                    {m} = {nn}.SyncBatchNorm.convert_sync_batchnorm({m})
                """
            if model.each is not None:  # a list of models: convert each one on CUDA
                template = """
                if {D}:
                    {m} = [{nn}.SyncBatchNorm.convert_sync_batchnorm({e}) if {cuda} else {e} for {e} in {m}]
                """
            stmts = ctx.plan.statements(
                template,
                D=ctx.env("DISTRIBUTED"),
                cuda=cuda_test(ctx, model.each or model.handle, anchor),
                m=model.handle,
                e=model.each or "",
                nn=nn,
            )
            if where == "after":
                ctx.plan.insert_after(anchor, stmts, order=Order.SYNC_BATCHNORM)
            else:
                ctx.plan.insert_before(anchor, stmts, order=Order.SYNC_BATCHNORM)


def _built_inside_wrap(facts, model) -> bool:
    existing = facts.models.wrapped(model)
    if existing is None:
        return False
    first = existing.args[0].value if existing.args else None
    return dotted(first) != model.handle if first is not None else True


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
        model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
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

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
        if DISTRIBUTED and next(model.parameters()).is_cuda:
            model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="BatchNorm layers become SyncBatchNorm before the wrap, on CUDA (the only place it runs):",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "BatchNorm statistics stay per rank: convert the model with SyncBatchNorm before the DDP wrap "
            "(the model is built inside DDP(...): convert it before wrapping)"
        ),
        note="Reported without a fix: the model is built inside `DDP(...)`, leaving no place to convert it:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("nccl")
        model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1)).cuda()
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Converted already:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 1)))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="LayerNorm normalises each sample on its own: nothing to synchronise:",
    ),
)
