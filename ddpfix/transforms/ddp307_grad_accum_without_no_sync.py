"""DDP307: gradient accumulation that all-reduces on every micro-step instead of only the last."""

from __future__ import annotations

import libcst as cst

from ..analysis.accumulation import mentions_sync, micro_loops, unsynced_step
from ..examples import clean, fixes, reports
from ..handles import wrappers
from ..rule import Context, Order, Rule
from ..syntax import anchor_of, assign_targets, calls_in, code_of, dotted


class GradAccumWithoutNoSync(Rule):
    code = "DDP307"
    name = "grad-accum-without-no-sync"
    message = "gradient accumulation through the DDP wrapper without no_sync(): every micro-step all-reduces"
    reads = frozenset({"wraps"})
    docs = """
## What
Gradient accumulation through a DDP-wrapped model in one of two shapes: a batch loop that calls
`backward()` every iteration but steps the optimizer only under `if (i + 1) % accum_steps == 0:`,
or an inner loop of micro-steps (`for micro in range(accum_steps): ... loss.backward()`) with the
optimizer step after it. Only an optimizer's step counts (`optimizer.step()`, `scaler.step(optimizer)`):
`if (i + 1) % 8 == 0: scheduler.step()` beside an optimizer that steps every iteration is no
accumulation. Reported when the loop never uses `no_sync()`, and also when it does but on the wrong
micro-steps: the micro-step that steps the optimizer (or every micro-step) runs under `no_sync()`.

## Why
DDP all-reduces the gradients in every backward. During accumulation only the last micro-step's
all-reduce is needed: averaging is linear, so the result is the same, but the script pays k times
the communication. PyTorch's docs: run the non-final micro-steps (forward *and* backward) under
`model.no_sync()`, "or else gradients will still be synchronized". The reverse is a bug: gradients
accumulated under `no_sync()` are averaged by the next synchronised backward, so when the stepping
micro-step does not sync, the optimizer steps on each rank's own gradients and the ranks drift apart.

## Example
```python
for xb, yb in loader:
    for micro in range(accum_steps):
        loss = F.mse_loss(model(xb[micro::accum_steps]), yb[micro::accum_steps]) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```
becomes
```python
for xb, yb in loader:
    for micro in range(accum_steps):
        if DISTRIBUTED:
            model.require_backward_grad_sync = micro == accum_steps - 1
        loss = F.mse_loss(model(xb[micro::accum_steps]), yb[micro::accum_steps]) / accum_steps
        loss.backward()
    optimizer.step()
    optimizer.zero_grad()
```
Setting `require_backward_grad_sync` before the forward is exactly what `with model.no_sync():`
does for the micro-steps it covers, without re-indenting the loop body. In the `%` shape the step
condition is copied verbatim (`model.require_backward_grad_sync = (i + 1) % accum_steps == 0`), so
the micro-steps that sync are the ones that step; in the inner-loop shape the last iteration syncs
(`micro == accum_steps - 1`, `i == len(chunks) - 1` for `enumerate(chunks)`).

## Fix safety
Safe for the recognised shapes: the forward through the wrapper and `backward()` in the loop body;
the `%` step condition over names known at the top of the iteration, or an inner loop over
`range(n)` / `enumerate(x)` that neither breaks nor changes its count. Anything else gets the
diagnostic only. Where the script places `no_sync()` (or sets `require_backward_grad_sync`) itself,
its conditions are evaluated for small accumulation counts: a stepping micro-step that does not sync
is reported (no automatic fix); conditions over other names are not judged.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        handles = wrappers(ctx)
        if not handles:
            return
        schedulers = {t for site in facts.training.scheduler_sites for t in assign_targets(site.stmt)}
        for micro in micro_loops(facts.index.loops, facts.training.optimizer_targets, schedulers):
            loop = micro.loop
            handle = next((h for h in handles if any(dotted(c.func) == h for c in calls_in(loop.body))), None)
            if handle is None:
                continue
            if mentions_sync(loop.body) or _sync_around(facts, loop):
                where = unsynced_step(facts.index, micro)
                if where is not None:
                    node = where.item if isinstance(where, cst.WithItem) else anchor_of(where)
                    ctx.report(
                        node,
                        "no_sync() covers the micro-step that steps the optimizer: the gradients accumulated since the "
                        "last synchronised backward are never averaged and the ranks drift apart; sync on the stepping "
                        "micro-step only",
                        fix="none",
                    )
                continue
            if micro.blocker is not None:
                ctx.report(
                    micro.backward,
                    f"{self.message}: run the non-final micro-steps under {handle}.no_sync() ({micro.blocker})",
                    fix="none",
                )
                continue
            if not ctx.report(micro.backward):
                continue
            guard = _wrap_condition(ctx, facts, handles[handle][1])
            line = f"{handle}.require_backward_grad_sync = {micro.sync_when()}"
            if guard is None:
                stmts = ctx.plan.statements(line)
            else:
                stmts = ctx.plan.statements("if {g}:\n    {line}", g=guard, line=line)
            ctx.plan.prepend(loop.body, stmts, order=Order.NO_SYNC)


def _sync_around(facts, loop: cst.CSTNode) -> bool:
    """A `with model.no_sync():` around the loop, or a loop around it that decides the sync itself."""
    for anc in facts.index.ancestors(loop):
        if isinstance(anc, cst.FunctionDef):
            return False
        if isinstance(anc, cst.With) and any(mentions_sync(item) for item in anc.items):
            return True
        if isinstance(anc, (cst.For, cst.While)):
            return mentions_sync(anc.body)
    return False


def _wrap_condition(ctx: Context, facts, wrap_stmt: cst.CSTNode) -> str | None:
    """None for an unconditional wrap the script has; the script's own test for `if <test>: model = DDP(...)`;
    DISTRIBUTED for a wrap this plan adds."""
    if not any(wrap_stmt is d.stmt for d in _ddp_sites(facts)):
        return ctx.env("DISTRIBUTED")
    block = facts.index.site(wrap_stmt).block
    owner = facts.index.parent.get(block)
    if isinstance(owner, cst.If) and owner.body is block:
        return code_of(owner.test)
    return None


def _ddp_sites(facts):
    return [facts.index.site(c) for c in facts.models.ddp_calls]


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        ACCUM = 4
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(32):
            loss = model(torch.randn(8, 4)).pow(2).mean() / ACCUM
            loss.backward()
            if (i + 1) % ACCUM == 0:
                opt.step()
                opt.zero_grad()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        ACCUM = 4
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(32):
            model.require_backward_grad_sync = (i + 1) % ACCUM == 0
            loss = model(torch.randn(8, 4)).pow(2).mean() / ACCUM
            loss.backward()
            if (i + 1) % ACCUM == 0:
                opt.step()
                opt.zero_grad()
        """,
        note="Only the micro-step that steps synchronises; the condition is the step's own:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        ACCUM = 4
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        micro = 0
        for x in torch.randn(32, 8, 4):
            loss = model(x).pow(2).mean() / ACCUM
            loss.backward()
            micro += 1
            if micro % ACCUM == 0:
                opt.step()
                opt.zero_grad()
        """,
        message=(
            "gradient accumulation through the DDP wrapper without no_sync(): every micro-step all-reduces: "
            "run the non-final micro-steps under model.no_sync() (its step condition is computed in the loop)"
        ),
        note="Reported without a fix: the step condition is computed inside the loop, after the forward:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        ACCUM = 4
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for i in range(32):
            loss = model(torch.randn(8, 4)).pow(2).mean() / ACCUM
            if (i + 1) % ACCUM != 0:
                with model.no_sync():
                    loss.backward()
                continue
            loss.backward()
            opt.step()
            opt.zero_grad()
        """,
        note="Accumulation under `no_sync()` already:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
        for i in range(32):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if (i + 1) % 8 == 0:
                scheduler.step()
        """,
        note="The optimizer steps every iteration; only the scheduler waits: no accumulation:",
    ),
)
