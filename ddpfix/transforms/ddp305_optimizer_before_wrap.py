"""DDP305: the optimizer (or LR scheduler) is built before the model is moved and wrapped."""

from __future__ import annotations

from ..rule import Context, Order, Rule
from ..syntax import anchor_of


class OptimizerBeforeWrap(Rule):
    code = "DDP305"
    name = "optimizer-before-wrap"
    message = "optimizer built before the model is moved and wrapped: build it after the DDP wrap"
    docs = """
## What
`optimizer = SGD(model.parameters())` before `model.to(device)` / `DDP(model)`.

## Why
DDP and `Module.to` keep the same Parameter objects on CPU and CUDA, so this usually works, but the
torch.optim docs ask for the move first, other backends (TPU) break, and reading the script top to
bottom no longer matches what the optimizer holds. The reference order is
`to(device) → SyncBatchNorm → DDP → optimizer → scheduler`.

## Example
```python
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model.to(device)
```
becomes
```python
model = Net()
model.to(device)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
```

## Fix safety
Safe when the optimizer (and the scheduler built on it) sit in the same block as the wrap and
nothing before the wrap uses them; otherwise the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for model in facts.models.trained:
            if facts.models.wrapped(model) is not None or facts.models.dataparallel(model) is not None:
                continue
            point = facts.models.wrap_point(model)
            for stmt in point.blocked:
                ctx.report(
                    anchor_of(stmt),
                    "optimizer built before the model is loaded and wrapped, and used before the wrap: reorder by hand",
                    fix="none",
                )
            if not point.moves:
                continue
            first = point.moves[0]
            if not ctx.report(anchor_of(first)):
                continue
            for i, stmt in enumerate(point.moves):
                ctx.plan.move_after(stmt, point.anchor, order=Order.OPTIMIZER + i)
