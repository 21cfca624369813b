"""DDP305: the optimizer (or LR scheduler) is built before the model is moved and wrapped."""

from __future__ import annotations

from ..examples import clean, fixes, reports
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
Safe when the optimizer sits in the same block as the wrap: it moves below the wrap together with
the lines after it that use it (the scheduler built on it, `optimizer.load_state_dict(ckpt["opt"])`),
in their order. When a statement that also prepares the model uses it (a resume block loading both)
and the model still moves device afterwards, the diagnostic only.
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


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            model.to(device)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        """
        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1)
            model.to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="The optimizer moves below the device move, where the DDP wrap goes (DDP301 adds the wrap in between):",
    ),
    reports(
        """
        import os

        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            if os.path.exists("last.pt"):
                ckpt = torch.load("last.pt", map_location="cpu")
                model.load_state_dict(ckpt["model"])
                opt.load_state_dict(ckpt["opt"])
            model.to(device)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        message="optimizer built before the model is loaded and wrapped, and used before the wrap: reorder by hand",
        note=(
            "Reported without a fix: the resume block restores the optimizer before the model moves, so the "
            "optimizer cannot simply move down:"
        ),
    ),
    clean(
        """
        import torch
        import torch.nn as nn


        def main():
            device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
            model = nn.Linear(4, 1)
            model.to(device)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="Move, then optimizer: the wrap has its place between them:",
    ),
)
