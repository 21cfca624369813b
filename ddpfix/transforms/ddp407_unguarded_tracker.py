"""DDP407: TensorBoard / W&B / MLflow trackers on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import TRACKER_CTORS, TRACKER_MODULES
from ..edits import guard_site
from ..rule import Context, Rule
from ..syntax import assign_targets, dotted, receiver


class UnguardedTracker(Rule):
    code = "DDP407"
    name = "unguarded-tracker"
    message = "experiment tracker created on every rank: one event file or run per process"
    docs = """
## What
`SummaryWriter(...)`, `wandb.init/log`, `mlflow.*` outside a rank-0 condition.

## Why
Every process creates its own event file / run and logs its own (partial) numbers: N runs in the
dashboard, or N interleaved curves in one.

## Example
```python
writer = SummaryWriter("runs/exp")
...
writer.add_scalar("loss", loss.item(), step)
```
becomes
```python
writer = SummaryWriter("runs/exp") if RANK == 0 else None
...
if RANK == 0:
    writer.add_scalar("loss", loss.item(), step)
```
The writer name stays bound on every rank (to `None` off rank 0), so passing it around keeps working;
every statement that uses it is guarded.

## Fix safety
Safe.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        writers: set[str] = set()
        for call in facts.names.calls_matching(
            lambda q: q in TRACKER_CTORS or q in {f"{m}.init" for m in TRACKER_MODULES}
        ):
            site = facts.index.site(call)
            targets = assign_targets(site.stmt)
            if targets and site.stmt.body[0].value is call and not facts.ranks.rank_guarded(call):  # type: ignore[attr-defined]
                writers.update(targets)
                if ctx.report(call):
                    cond = ctx.rank0(call)
                    ctx.plan.replace(
                        call,
                        lambda n, cond=cond: cst.IfExp(
                            test=cst.parse_expression(cond),
                            body=n,
                            orelse=cst.Name("None"),
                            whitespace_before_if=cst.SimpleWhitespace(" "),
                            whitespace_after_if=cst.SimpleWhitespace(" "),
                            whitespace_before_else=cst.SimpleWhitespace(" "),
                            whitespace_after_else=cst.SimpleWhitespace(" "),
                        ),
                    )
            elif not targets:
                guard_site(ctx, call)
        params = {w.split(".")[-1] for w in writers}

        def uses_tracker(call: cst.Call) -> bool:
            recv = receiver(call)
            name = dotted(recv) if recv is not None else None
            if name is None:
                return False
            if name in writers or name.split(".")[-1] in params:
                return True
            q = facts.names.qualname(recv) or ""
            return q in TRACKER_MODULES and dotted(call.func) not in {f"{m}.init" for m in TRACKER_MODULES}

        for call in facts.index.statement_calls(uses_tracker):
            guard_site(ctx, call, "tracker used on every rank: log from rank 0 only")
