"""DDP105: backward() or optimizer.step() on some ranks only."""

from __future__ import annotations

import libcst as cst

from ..rule import NONE, Context, Rule
from ..syntax import dotted, method_name, receiver


class StepInRankGuard(Rule):
    code = "DDP105"
    name = "optimizer-step-in-rank-guard"
    message = "backward()/step() on some ranks only: the others wait for a gradient all-reduce that never comes"
    fix = NONE
    docs = """
## What
`loss.backward()` or `optimizer.step()` inside a branch that depends on the rank.

## Why
Under DDP the backward pass all-reduces gradients: every rank must run it the same number of times.
A rank that skips it leaves the others waiting (or pairs their buckets with an unrelated collective),
and a step taken on one rank only makes the parameters drift apart for good, since DDP only
broadcasts them at construction.

## Example
```python
if rank == 0:
    loss.backward()
    optimizer.step()
```
should run on every rank:
```python
loss.backward()
optimizer.step()
```

## Fix safety
None: moving training steps changes what the script does; fix it by hand.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        for call in facts.index.calls:
            name = method_name(call)
            if name == "backward" or (
                name == "step" and dotted(receiver(call) or cst.Name("_")) in facts.training.optimizer_targets
            ):
                for anc in facts.index.ancestors(call):
                    if isinstance(anc, cst.If) and ranks.depends_on_rank(anc.test):
                        ctx.report(
                            call, f"{name}() inside a rank condition: every rank must run the same training steps"
                        )
                        break
                    if isinstance(anc, cst.FunctionDef):
                        break
