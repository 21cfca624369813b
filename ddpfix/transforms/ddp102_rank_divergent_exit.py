"""DDP102: return/break/continue/raise on a rank- or data-dependent condition in a synchronising loop."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.ranks import Ranks
from ..examples import clean, reports
from ..rule import NONE, Context, Rule
from ..syntax import calls_in, code_of, method_name, walk

DATA_DEPENDENT = re.compile(r"isnan|isinf|isfinite|\bloss\b|\.item\(\)")
EXITS = (cst.Return, cst.Break, cst.Continue, cst.Raise)


class RankDivergentExit(Rule):
    code = "DDP102"
    name = "rank-divergent-exit"
    message = "loop exit on a condition that can differ between ranks: the other ranks wait in the next collective"
    fix = NONE
    docs = """
## What
A `return`, `break`, `continue` or `raise` under a condition that depends on the rank or on this
rank's data (`if torch.isnan(loss): continue`, `if rank == 0 and step > n: break`) inside a loop
that synchronises (a backward through DDP, or a collective).

## Why
DDP's backward is a collective. When one rank skips a step the others block in their all-reduce;
worse, a later collective of one rank can pair with a different one of another and return garbage
before everything times out. Without `TORCH_DISTRIBUTED_DEBUG=DETAIL` nothing points at this line.

## Example
```python
if torch.isnan(loss):
    continue
```
should become a decision every rank takes together:
```python
bad = torch.tensor(float(torch.isnan(loss)), device=device)
dist.all_reduce(bad, op=dist.ReduceOp.MAX)
if bad.item():
    continue
```

## Fix safety
None: the right collective decision depends on the script; the diagnostic points at the exit.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        synced = bool(facts.models.ddp_calls or facts.launch.init_calls or facts.models.trained)
        if not synced:
            return
        for loop in facts.index.loops:
            if not self._synchronises(facts, ranks, loop):
                continue
            for node in walk(loop.body):
                if not isinstance(node, cst.If):
                    continue
                if facts.index.enclosing(node, cst.FunctionDef) is not facts.index.enclosing(loop, cst.FunctionDef):
                    continue
                rank_dep = ranks.depends_on_rank(node.test)
                data_dep = bool(DATA_DEPENDENT.search(code_of(node.test)))
                if not (rank_dep or data_dep):
                    continue
                for exit_node in _exits(node.body, loop):
                    kind = type(exit_node).__name__.lower()
                    why = "the rank" if rank_dep else "this rank's data"
                    ctx.report(
                        exit_node,
                        f"`{kind}` on a condition that depends on {why}: "
                        f"ranks leave the synchronising loop at different steps and the others hang; decide together (all_reduce a flag)",
                    )

    @staticmethod
    def _synchronises(facts, ranks: Ranks, loop) -> bool:
        if ranks.collectives_in(loop.body):
            return True
        return any(method_name(c) == "backward" for c in calls_in(loop.body))


def _exits(body: cst.CSTNode, loop: cst.CSTNode):
    for n in walk(body):
        if isinstance(n, EXITS):
            yield n


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
            if torch.isnan(loss):
                continue
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        message=(
            "`continue` on a condition that depends on this rank's data: ranks leave the synchronising loop "
            "at different steps and the others hang; decide together (all_reduce a flag)"
        ),
        note="One rank's NaN skips its backward; the others wait in their all-reduce:",
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
        for step in range(100):
            if step >= 10:
                break
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="An exit every rank takes at the same step:",
    ),
)
