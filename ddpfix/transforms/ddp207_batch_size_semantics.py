"""DDP207: batch size and gradient scale mean something else per process than in one process (info)."""

from __future__ import annotations

import libcst as cst

from ..analysis.models import DP_NAMES
from ..diagnostic import NONE
from ..examples import clean, reports
from ..handles import under_no_grad
from ..rule import Context, Rule
from ..syntax import code_of, kwarg, positional, string_value


class BatchSizeSemantics(Rule):
    code = "DDP207"
    name = "batch-size-semantics"
    message = "batch_size is per process under DDP: the global batch is batch_size x WORLD_SIZE"
    fix = NONE
    docs = """
## What
An information finding where the single-process meaning of the batch does not carry over:
- the training DataLoader's `batch_size` in a script that used `nn.DataParallel`, whose batch was
  global (split across the GPUs), while under DDP every process loads `batch_size` samples (not
  where DataParallel is offered beside the script's own DDP wrap, in the other branch of an `if`);
- a loss with `reduction="sum"` in a script trained through DDP (not one computed under
  `torch.no_grad()`, as an evaluation's summed loss is: no gradient flows from it).

## Why
DDP's `batch_size` is per process, so N processes train on a global batch of N x `batch_size`:
coming from DataParallel with the same number, the global batch grows N-fold, and so does the number
of samples per optimizer step. DDP *averages* gradients across processes; with a summed loss each
step's gradient is 1/N of the summed gradient one process would compute over the same global batch.
Both change the effective learning rate; neither raises an error.

## Example
```python
loader = DataLoader(dataset, batch_size=256, sampler=sampler)  # was DataParallel over 4 GPUs
```
Decide explicitly: keep the global batch (`batch_size=256 // WORLD_SIZE`) or keep 256 per process
and scale the learning rate (the linear-scaling rule of Goyal et al., "Accurate, Large Minibatch
SGD", is a judgement call, not a law). For a summed loss, multiply it by `WORLD_SIZE` or switch to
`reduction="mean"` and retune.

## Fix safety
No automatic fix: which policy is right is a training decision, not a code defect.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if any(not facts.models.beside_ddp(c) for c in facts.names.calls_matching(lambda q: q in DP_NAMES)):
            for loader, _ in facts.data.training_loaders:
                call = loader.site.node
                assert isinstance(call, cst.Call)
                bs = kwarg(call, "batch_size") or positional(call, 1)
                where = bs.value if bs is not None else call
                size = code_of(bs.value) if bs is not None else "1"
                ctx.report(
                    where,
                    f"batch_size={size} was split across GPUs by DataParallel; under DDP each process loads {size}: "
                    "the global batch grows by WORLD_SIZE (keep it with batch_size // WORLD_SIZE, or scale the learning rate)",
                )
        if not (facts.models.ddp_calls or facts.models.trained):
            return
        for call in facts.index.calls:
            reduction = kwarg(call, "reduction")
            q = facts.names.call_qual(call) or ""
            if reduction is None or string_value(reduction.value) != "sum" or not q.startswith("torch.nn"):
                continue
            if under_no_grad(facts, call):
                continue  # an evaluation's summed loss: no gradient to average
            ctx.report(
                reduction,
                'reduction="sum" under DDP: gradients are averaged across processes, so each step\'s gradient is '
                "1/WORLD_SIZE of the single-process sum over the same global batch",
            )


EXAMPLES = (
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss_fn = nn.MSELoss(reduction="sum")
        for step in range(10):
            loss = loss_fn(model(torch.randn(8, 4)), torch.randn(8, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            'reduction="sum" under DDP: gradients are averaged across processes, so each step\'s gradient is '
            "1/WORLD_SIZE of the single-process sum over the same global batch"
        ),
        note=(
            "A summed loss: DDP averages the gradients across processes, so each step is 1/WORLD_SIZE of what "
            "one process summing the same samples would take:"
        ),
    ),
    reports(
        """
        import torch
        import torch.nn as nn
        from torch.utils.data import DataLoader, TensorDataset

        ds = TensorDataset(torch.randn(1024, 4), torch.randn(1024, 1))
        loader = DataLoader(ds, batch_size=256, shuffle=True)
        model = nn.DataParallel(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for x, y in loader:
            loss = nn.functional.mse_loss(model(x.cuda()), y.cuda())
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "batch_size=256 was split across GPUs by DataParallel; under DDP each process loads 256: the "
            "global batch grows by WORLD_SIZE (keep it with batch_size // WORLD_SIZE, or scale the learning "
            "rate)"
        ),
        note="DataParallel split 256 samples across its GPUs; under DDP every process loads 256:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        loss_fn = nn.MSELoss()
        for step in range(10):
            loss = loss_fn(model(torch.randn(8, 4)), torch.randn(8, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A mean loss with a per-process batch, as DDP means it:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1))
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            total = nn.functional.mse_loss(model(torch.randn(8, 4)), torch.randn(8, 1), reduction="sum")
        """,
        note="An evaluation's summed loss under `torch.no_grad()`: no gradient to average:",
    ),
)
