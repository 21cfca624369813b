"""DDP103: the DDP wrapper's forward run on rank 0 only (evaluation, sampling)."""

from __future__ import annotations

import libcst as cst

from ..analysis.model_params import FORWARD, RETURNS, TRAINS, UNWRAPS
from ..examples import clean, fixes
from ..handles import Handoff, handoffs, rank0_only, raw_at, wrappers
from ..rule import Context, Rule
from ..syntax import calls_in, code_of, dotted


class Rank0ForwardThroughDdp(Rule):
    code = "DDP103"
    name = "rank0-forward-through-ddp"
    message = (
        "forward of the DDP wrapper on rank 0 only: DDP's forward can issue collectives the other ranks never join"
    )
    requires = ("DDP301",)
    reads = frozenset({"wraps", "hoisted"})
    docs = """
## What
`model(x)`, or a helper of the script (of this file or of its own modules) that runs the model's
forward (`evaluate(model, ...)`), inside an `if rank == 0:` block, where `model` is the
`DistributedDataParallel` wrapper. Also such a forward in a statement another rule guards to rank 0
(`print(evaluate(model))`, a tracker's `log(...)`): the guard makes it a rank-0-only forward, so this
rule takes a second look once every rule has planned its edits.

## Why
DDP's forward broadcasts buffers (BatchNorm statistics) and, in training mode, prepares the gradient
reduction. Run on rank 0 alone it waits for the other ranks:
`gloo::EnforceNotMet ... Received data size doesn't match expected size. Is there a distributed
collective mismatch in your code?`, or a hang.

## Example
```python
if rank == 0:
    acc = evaluate(model, val_loader)
```
becomes
```python
if rank == 0:
    acc = evaluate(raw_model, val_loader)
```
The plain module is passed at the call, spelled with a name that exists there (`self.model.module`
in another method than the one that wrapped it).

## Fix safety
Safe: the unwrapped module computes the same outputs without collectives. A helper that reaches
`.module` itself, or hands the model back (`unwrap_model(model)`), is left alone; a helper that trains
through the model, or a call where no name reaches the plain module, gets the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        self._forwards(ctx, [c for c in ctx.facts.index.calls if rank0_only(ctx, c)])
        for hand in handoffs(ctx):
            if hand.code == self.code:
                self._handoff(ctx, hand)

    def after_plan(self, ctx: Context) -> None:
        """Forwards in statements that other rules guard to rank 0 (`print(evaluate(model))` becomes
        `if RANK == 0: print(...)`): the guard makes them rank-0-only forwards."""
        facts = ctx.facts
        guarded = [*ctx.plan.guards, *ctx.plan.unmade_guards]
        hoisted = {id(c) for c in ctx.plan.hoisted}  # taken out of the guard: every rank runs them
        calls = [
            c
            for s in guarded
            for c in calls_in(s)
            if not rank0_only(ctx, c) and not any(id(a) in hoisted for a in (c, *ctx.facts.index.ancestors(c)))
        ]  # (those run() saw are left out)
        if not calls:
            return
        self._forwards(ctx, calls)
        wrapped = wrappers(ctx)
        handed = {id(h.arg) for h in handoffs(ctx)}  # DDP308, DDP402, DDP403 pass the plain module already
        for call in calls:
            for arg in call.args:
                handle = dotted(arg.value)
                if arg.star or handle not in wrapped:
                    continue
                raw, wrap_stmt = wrapped[handle]  # type: ignore[index]
                if not facts.wraps.after_wrap(call, handle, wrap_stmt):  # type: ignore[arg-type]
                    continue
                uses = facts.helpers.uses(call, arg)
                if id(arg) in handed or not uses or FORWARD not in uses or uses & {UNWRAPS, RETURNS}:
                    continue
                spelled = raw_at(ctx, handle, raw, wrap_stmt, call)  # type: ignore[arg-type]
                fixable = spelled is not None and TRAINS not in uses
                self._handoff(ctx, Handoff(call, arg, handle, spelled, uses, self.code, True, fixable))  # type: ignore[arg-type]

    def _forwards(self, ctx: Context, calls: list[cst.Call]) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            for call in calls:
                if dotted(call.func) != handle:
                    continue
                if not facts.wraps.after_wrap(call, handle, wrap_stmt):
                    continue
                spelled = raw_at(ctx, handle, raw, wrap_stmt, call)
                if spelled is None:
                    ctx.report(
                        call.func,
                        f"`{handle}` is the DDP wrapper: on rank 0 alone run the plain module (none is reachable "
                        "here: keep one before wrapping)",
                        fix="none",
                    )
                elif ctx.report(call.func, f"`{handle}` is the DDP wrapper: on rank 0 alone use `{spelled}`"):
                    ctx.plan.replace(call.func, lambda n, s=spelled: cst.parse_expression(s))

    def _handoff(self, ctx: Context, hand: Handoff) -> None:
        callee = code_of(hand.call.func)
        if not hand.fixable:
            why = hand.why
            ctx.report(
                hand.arg.value,
                f"{callee}() runs the forward of `{hand.handle}`, the DDP wrapper, on rank 0 alone; pass the plain "
                f"module ({why}: by hand)",
                fix="none",
            )
        elif ctx.report(
            hand.arg.value,
            f"{callee}() runs the forward of `{hand.handle}`, the DDP wrapper, on rank 0 alone: pass `{hand.raw}`",
        ):
            ctx.plan.replace(hand.arg.value, lambda n, s=hand.raw: cst.parse_expression(s))


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    print(model(torch.randn(8, 4)).mean().item())
        dist.destroy_process_group()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if dist.get_rank() == 0:
                with torch.no_grad():
                    print(net(torch.randn(8, 4)).mean().item())
        dist.destroy_process_group()
        """,
        note="On rank 0 alone, the forward goes through the plain module:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                check = model(torch.randn(8, 4)).mean().item()
            if dist.get_rank() == 0:
                print(check)
        dist.destroy_process_group()
        """,
        note="Every rank runs the forward; only rank 0 prints:",
    ),
)
