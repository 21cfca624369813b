"""DDP309: the training forward runs through `model.module(...)`, around the DDP wrapper."""

from __future__ import annotations

import libcst as cst

from ..analysis.model_params import TRAINS
from ..examples import clean, reports
from ..handles import under_no_grad, wrappers
from ..rule import Context, Rule
from ..syntax import calls_in, dotted, method_name


class ForwardBypassesDdp(Rule):
    code = "DDP309"
    name = "forward-bypasses-ddp"
    message = "training forward through the unwrapped module: DDP never synchronises these gradients"
    reads = frozenset({"wraps"})
    fix = "none"
    docs = """
## What
A forward pass through `model.module(...)` (or through the handle kept before wrapping) inside a
loop that calls `backward()`, when `model` is the `DistributedDataParallel` wrapper. Also a model
handed to a function of the script that trains it (`model = train(model, loader)`) before the
statement that wraps it, in the same function: that training runs on each rank alone.

## Why
DDP synchronises gradients from its own `forward`: that is where it prepares the reducer for the
coming backward. A forward that goes around the wrapper trains each rank on its own gradients. The
weights drift apart silently, and stay apart: DDP broadcasts parameters only once, at construction.
Nothing fails; the ranks end up with different models and rank 0 saves just one of them.

## Example
```python
for xb, yb in loader:
    loss = F.cross_entropy(model.module(xb), yb)
    loss.backward()
```
should be
```python
for xb, yb in loader:
    loss = F.cross_entropy(model(xb), yb)
    loss.backward()
```

## Fix safety
No automatic fix: the script may call the inner module on purpose (a second forward whose
gradients must not be averaged, or inside `no_sync()` accumulation). Forwards under
`torch.no_grad()` or `torch.inference_mode()` (evaluation) are not reported.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            inner = {f"{handle}.module", raw}
            for call in facts.index.calls:
                name = dotted(call.func)
                if name not in inner:
                    continue
                if (
                    not facts.wraps.after_wrap(call, handle, wrap_stmt)
                    or not _in_training_loop(facts, call)
                    or under_no_grad(facts, call)
                ):
                    continue
                ctx.report(
                    call,
                    f"forward through {name}(...) bypasses the DDP wrapper: gradients are not synchronised; call {handle}(...)",
                )
            for call in _trained_before(facts, handle, wrap_stmt):
                line = facts.index.position(wrap_stmt).start.line
                own = any(facts.index.contains(wrap_stmt, c) for c in facts.models.ddp_calls)
                where = f"line {line}" if own else f"placed after line {line}"
                ctx.report(
                    call,
                    f"{dotted(call.func)}(...) trains {handle} before its DDP wrap ({where}): every rank trains "
                    "its own copy here; wrap the model before the first training",
                )


def _trained_before(facts, handle: str, wrap_stmt: cst.CSTNode) -> list[cst.Call]:
    """Calls of the wrap's own function, before the wrap (or in the statement the wrap follows), that
    hand `handle` to a function that trains it (`model = train(model, loader)`, then `model = DDP(model)`)."""
    index = facts.index
    func = index.enclosing(wrap_stmt, cst.FunctionDef)
    out = []
    for call in index.calls:
        if not any(dotted(arg.value) == handle for arg in call.args):  # (the cheap test first)
            continue
        if index.enclosing(call, cst.FunctionDef) is not func:
            continue
        if not (index.before(call, wrap_stmt) or index.contains(wrap_stmt, call)):
            continue
        if facts.ranks.rank_guarded(call):
            continue
        for arg in call.args:
            if dotted(arg.value) == handle and TRAINS in (facts.helpers.uses(call, arg) or ()):
                out.append(call)
                break
    return out


def _in_training_loop(facts, node: cst.CSTNode) -> bool:
    """Inside the loop that itself runs `backward()` (not an outer epoch loop), on every rank."""
    if facts.ranks.rank_guarded(node):
        return False
    loop = _loop_of(facts, node)
    return loop is not None and any(
        method_name(c) == "backward" and _loop_of(facts, c) is loop for c in calls_in(loop.body)
    )


def _loop_of(facts, node: cst.CSTNode) -> cst.CSTNode | None:
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.For, cst.While)):
            return anc
        if isinstance(anc, cst.FunctionDef):
            return None
    return None


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
        for step in range(10):
            loss = model.module(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "forward through model.module(...) bypasses the DDP wrapper: gradients are not synchronised; call "
            "model(...)"
        ),
        note="The forward goes around the wrapper, so each rank keeps its own gradients:",
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
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                check = model.module(torch.randn(8, 4)).mean()
        """,
        note="A forward through the plain module under `torch.no_grad()` computes no gradients to synchronise:",
    ),
)
