"""DDP305: the optimizer (or LR scheduler) is built before the model is moved and wrapped."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import LOGGER_METHODS
from ..examples import clean, fixes, reports
from ..rule import Context, Order, Rule
from ..syntax import anchor_of, assign_targets, code_of, dotted, mentions, method_name, walk


class OptimizerBeforeWrap(Rule):
    code = "DDP305"
    name = "optimizer-before-wrap"
    message = "optimizer built before the model is moved and wrapped: build it after the DDP wrap"
    docs = """
## What
`optimizer = SGD(model.parameters())` before `model.to(device)` / `DDP(model)`.

A script that wraps the model itself (`model = DDP(model)`) below the line that builds its optimizer
gets the same finding.

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
Below the script's own wrap: safe when the optimizer sits in the block that holds the wrap (or the
`if` around it), and what uses it on the way there (a scheduler) does not also use the model; then it
moves below that statement with those lines. A resume block that restores the model and the optimizer
before the wrap leaves them as written (the optimizer already holds the model's parameters there).

Before a wrap ddpfix adds: safe when the optimizer sits in the same block as the wrap: it moves below the wrap together with
the lines after it that use it (the scheduler built on it, `optimizer.load_state_dict(ckpt["opt"])`),
in their order. When a statement that also prepares the model uses it (a resume block loading both)
and the model still moves device afterwards, the diagnostic only.

The order of what a plain run prints is kept: where the move would take a statement that prints or
logs (`print(optimizer)`) below another one (`print(criterion)`), the finding has no fix; in a conversion
the rank-0 guards then put those prints in one block, and a later pass moves the block whole.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for model in facts.models.trained:
            wrap = facts.models.wrapped(model)
            if wrap is not None:
                self._before_existing_wrap(ctx, model, wrap)
                continue
            if facts.models.dataparallel(model) is not None:
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
            passed = _reordered_output(facts.index, point.moves, point.anchor)
            if passed is not None:
                ctx.report(
                    anchor_of(first),
                    f"{self.message} (no fix: moving `{code_of(passed[0]).strip()}` below "
                    f"`{code_of(passed[1]).strip()}` would change the order of what the script prints; "
                    "move that output yourself, or build the optimizer after the wrap by hand)",
                    fix="none",
                )
                continue
            if not ctx.report(anchor_of(first)):
                continue
            for i, stmt in enumerate(point.moves):
                ctx.plan.move_after(stmt, point.anchor, order=Order.OPTIMIZER + i)

    def _before_existing_wrap(self, ctx: Context, model, wrap: cst.Call) -> None:
        """The script wraps the model itself, below its optimizer: the optimizer (with what uses it)
        moves below the statement holding the wrap, when nothing in between uses it."""
        facts = ctx.facts
        index = facts.index
        moved: set[int] = set()
        for opt in model.optimizers:
            if not isinstance(opt.node, cst.Call) or not index.before(opt.node, wrap) or id(opt.stmt) in moved:
                continue
            anchor = _holding(index, wrap, opt.block)
            if anchor is None:
                continue  # the wrap is in another function or another branch: not a reorder to make here
            body = list(opt.block.body)
            start, end = body.index(opt.stmt), body.index(anchor)
            moving, names = [opt.stmt], set(assign_targets(opt.stmt))
            for stmt in body[start + 1 : end]:
                if any(mentions(stmt, n) for n in names):
                    if mentions(stmt, model.handle.split(".")[0]):
                        moving = []  # the optimizer is used with the model on the way to the wrap
                        break
                    moving.append(stmt)
                    names.update(assign_targets(stmt))
            if not moving:
                continue  # a resume block restores both on the way: the same parameters, left as written
            moved.update(id(stmt) for stmt in moving)
            if ctx.report(anchor_of(opt.stmt), "optimizer built before the DDP wrap: build it after the wrap"):
                for i, stmt in enumerate(moving):
                    ctx.plan.move_after(stmt, anchor, order=Order.OPTIMIZER + i)


SHOWS = LOGGER_METHODS | {"write", "add_scalar"}  # methods that show or record output, as `print` does


def _shows(stmt: cst.CSTNode) -> cst.Call | None:
    """A call in `stmt` that prints or logs (what a plain run shows, in order)."""
    for node in walk(stmt):
        if isinstance(node, cst.Call) and (dotted(node.func) == "print" or method_name(node) in SHOWS):
            return node
    return None


def _reordered_output(index, moves: list, anchor: cst.CSTNode) -> tuple[cst.Call, cst.Call] | None:
    """(a call a moved statement shows, one it would move below) when the move below `anchor` would
    change the order of the script's output; None when it would not."""
    shown = next((c for c in map(_shows, moves) if c is not None), None)
    if shown is None:
        return None
    block = index.parent.get(moves[0])
    body = list(getattr(block, "body", ()))
    if moves[0] not in body:
        return None
    moving = {id(m) for m in moves}
    for stmt in body[body.index(moves[0]) + 1 :]:
        if id(stmt) not in moving and (passed := _shows(stmt)) is not None:
            return shown, passed
        if stmt is anchor or index.contains(stmt, anchor):
            break
    return None


def _holding(index, node: cst.CSTNode, block) -> cst.BaseStatement | None:
    """The statement of `block` that holds `node` (None: `node` is not inside `block`)."""
    site = index.site(node)
    while site.block is not block:
        owner = index.parent.get(site.block)
        if not isinstance(owner, (cst.If, cst.Else, cst.Try, cst.Finally, cst.With, cst.ExceptHandler)):
            return None  # not a block that runs in place (a function, a class, a loop)
        site = index.site(owner)
    return site.stmt


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
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            dist.init_process_group("gloo")
            model = nn.Linear(4, 1)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
            model = DDP(model)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            dist.init_process_group("gloo")
            model = nn.Linear(4, 1)
            model = DDP(model)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note="The script's own wrap: the optimizer and the scheduler built on it move below it:",
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
