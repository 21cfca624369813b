"""DDP307: gradient accumulation that all-reduces on every micro-step instead of only the last."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes, reports
from ..handles import wrappers
from ..rule import Context, Order, Rule
from ..syntax import assign_targets, calls_in, code_of, dotted, method_name, names_in, walk


class GradAccumWithoutNoSync(Rule):
    code = "DDP307"
    name = "grad-accum-without-no-sync"
    message = "gradient accumulation through the DDP wrapper without no_sync(): every micro-step all-reduces"
    reads = frozenset({"wraps"})
    docs = """
## What
A batch loop that calls `backward()` every iteration but steps the optimizer only every k-th one
(`if (i + 1) % accum_steps == 0: optimizer.step()`), through a DDP-wrapped model that never uses
`no_sync()`.

## Why
DDP all-reduces the gradients in every backward. During accumulation only the last micro-step's
all-reduce is needed: averaging is linear, so the result is the same, but the script pays k times
the communication. PyTorch's docs: run the non-final micro-steps (forward *and* backward) under
`model.no_sync()`, "or else gradients will still be synchronized".

## Example
```python
for i, (xb, yb) in enumerate(loader):
    loss = F.mse_loss(model(xb), yb) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
```
becomes
```python
for i, (xb, yb) in enumerate(loader):
    if DISTRIBUTED:
        model.require_backward_grad_sync = (i + 1) % accum_steps == 0
    loss = F.mse_loss(model(xb), yb) / accum_steps
    loss.backward()
    if (i + 1) % accum_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
```
Setting `require_backward_grad_sync` before the forward is exactly what `with model.no_sync():`
does for the micro-steps it covers, without re-indenting the loop body. The step condition is copied
verbatim, so the micro-steps that sync are the ones that step.

## Fix safety
Safe for the recognised shape: the forward through the wrapper and `backward()` in the loop body,
the optimizer step under an `if` whose condition uses `%` and only names known at the top of the
iteration. Anything else (condition computed inside the loop, forward in a helper) gets the
diagnostic only. A script that already uses `no_sync` or `require_backward_grad_sync` is left alone.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        if any(n in facts.index.identifiers for n in ("no_sync", "require_backward_grad_sync")):
            return
        handles = wrappers(ctx)
        if not handles:
            return
        for loop in facts.index.loops:
            if not isinstance(loop, (cst.For, cst.While)) or not isinstance(loop.body, cst.IndentedBlock):
                continue
            body = list(loop.body.body)
            step_if = next((s for s in body if isinstance(s, cst.If) and _is_accum_step(s)), None)
            if step_if is None:
                continue
            backward = next(
                (c for s in body if s is not step_if for c in calls_in(s) if method_name(c) == "backward"), None
            )
            if backward is None:
                continue
            handle = next((h for h in handles if any(dotted(c.func) == h for c in calls_in(loop.body))), None)
            if handle is None:
                continue
            before = body[: body.index(step_if)]
            assigned = {t for s in before for n in walk(s) for t in _bound(n)}
            if isinstance(loop, cst.While) or names_in(step_if.test) & assigned:
                ctx.report(
                    backward, f"{self.message}: run the non-final micro-steps under {handle}.no_sync()", fix="none"
                )
                continue
            if not ctx.report(backward):
                continue
            guard = _wrap_condition(ctx, facts, handles[handle][1])
            line = f"{handle}.require_backward_grad_sync = {code_of(step_if.test)}"
            if guard is None:
                stmts = ctx.plan.statements(line)
            else:
                stmts = ctx.plan.statements("if {g}:\n    {line}", g=guard, line=line)
            ctx.plan.prepend(loop.body, stmts, order=Order.NO_SYNC)


def _is_accum_step(stmt: cst.If) -> bool:
    has_mod = any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo) for n in walk(stmt.test))
    steps = any(method_name(c) == "step" for c in calls_in(stmt.body))
    return has_mod and steps and stmt.orelse is None


def _bound(node: cst.CSTNode) -> list[str]:
    if isinstance(node, cst.SimpleStatementLine):
        return assign_targets(node)
    if isinstance(node, cst.AugAssign):
        return [dotted(node.target) or ""]
    if isinstance(node, (cst.For, cst.CompFor)):
        return sorted(names_in(node.target))
    return []


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
            "run the non-final micro-steps under model.no_sync()"
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
)
