"""DDP105: backward() or optimizer.step() on some ranks only."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, reports
from ..rule import NONE, Context, Rule
from ..syntax import assign_targets, dotted, method_name, receiver


class StepInRankGuard(Rule):
    code = "DDP105"
    name = "optimizer-step-in-rank-guard"
    message = "backward()/step() on some ranks only: the others wait for a gradient all-reduce that never comes"
    fix = NONE
    docs = """
## What
`loss.backward()`, `optimizer.step()` or a learning-rate scheduler's `step()` inside a branch that
depends on the rank (or after an early exit that some ranks take), in the same function. A
`backward()` that runs before the script builds its DistributedDataParallel, in the same function and
outside any loop that builds it (a reference forward/backward of the plain model on rank 0, before
training starts), synchronises nothing and is left alone; a step there is still reported, since the
optimizer's state then differs between ranks.

## Why
Under DDP the backward pass all-reduces gradients: every rank must run it the same number of times.
A rank that skips it leaves the others waiting (or pairs their buckets with an unrelated collective),
and a step taken on one rank only makes the parameters drift apart for good, since DDP only
broadcasts them at construction. A scheduler stepped on rank 0 only gives rank 0 another learning
rate: the gradients are still averaged, but the updates, and so the parameters, diverge silently.

## Example
```python
if rank == 0:
    loss.backward()
    optimizer.step()
    scheduler.step()
```
should run on every rank:
```python
loss.backward()
optimizer.step()
scheduler.step()
```

## Fix safety
None: moving training steps changes what the script does; fix it by hand.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        schedulers = {t for site in facts.training.scheduler_sites for t in assign_targets(site.stmt)}
        for call in facts.index.calls:
            name = method_name(call)
            if name not in ("backward", "step"):
                continue
            target = dotted(receiver(call) or cst.Name("_"))
            if name == "step" and target in schedulers:
                what = f"{target}.step() inside a rank condition: the learning rate changes on some ranks only and the ranks' updates diverge"
            elif name == "backward" and _before_the_wrap(facts, call):
                continue  # nothing is wrapped yet: this backward synchronises nothing
            elif name == "backward" or target in facts.training.optimizer_targets:
                what = f"{name}() inside a rank condition: every rank must run the same training steps"
            else:
                continue
            if ranks.guard_of(call) is not None:
                ctx.report(call, what)


def _before_the_wrap(facts, call: cst.Call) -> bool:
    """Does `call` run before every DistributedDataParallel of the script is built, in the same
    function and outside any loop that also builds one (a reference forward/backward on the plain
    model, before training starts)?"""
    wraps = facts.models.ddp_calls
    if not wraps:
        return False
    scope = facts.index.scope_of(call)
    for wrap in wraps:
        if facts.index.scope_of(wrap) is not scope or not facts.index.before(call, wrap):
            return False
        if any(
            isinstance(a, (cst.For, cst.While)) and facts.index.contains(a, wrap) for a in facts.index.ancestors(call)
        ):
            return False
    return True


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
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            if dist.get_rank() == 0:
                opt.step()
        dist.destroy_process_group()
        """,
        message="step() inside a rank condition: every rank must run the same training steps",
        note="A step on rank 0 only: the replicas drift apart for good:",
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
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            if dist.get_rank() == 0:
                print(f"step {step}: lr {sched.get_last_lr()[0]}")
        dist.destroy_process_group()
        """,
        note="Every rank steps; rank 0 only reports:",
    ),
)
