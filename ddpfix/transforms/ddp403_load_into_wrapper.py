"""DDP403: load_state_dict on the DDP wrapper: plain checkpoint keys lack the `module.` prefix."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes, reports
from ..handles import handles_prefix, handoffs, keys_kept, once_wrapped, raw_at, wrap_level, wrappers
from ..rule import Context, Rule
from ..syntax import code_of, dotted, receiver


class LoadIntoWrapper(Rule):
    code = "DDP403"
    name = "load-into-wrapper"
    message = "load_state_dict() on the DDP wrapper: plain checkpoint keys miss the 'module.' prefix; load through the unwrapped model"
    reads = frozenset({"wraps"})
    docs = """
## What
`model.load_state_dict(...)` where `model` is (or becomes, once wrapped) the
`DistributedDataParallel` wrapper, or the wrapper handed to a helper of the script (of this file or
of its own modules) that loads into it (`load_checkpoint(model, path)`): typically restoring the best
checkpoint after training, or a resume placed after the wrap.

## Why
The wrapper's keys are `module.fc.weight`, ...; a checkpoint saved by a plain run (or through the
unwrapped model) has `fc.weight`. Under `torchrun` the load fails with
`RuntimeError: Error(s) in loading state_dict for DistributedDataParallel: Missing key(s) in
state_dict: "module.fc.weight", ... Unexpected key(s) in state_dict: "fc.weight", ...`, while a plain
run works, so the bug only shows on the cluster. With `strict=False` nothing fails and nothing is
loaded. A load on rank 0 only, after the wrap, leaves the ranks with different weights: DDP
broadcasts parameters once, at construction.

## Example
```python
model = Net().to(device)
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
...
model.load_state_dict(torch.load("best.pt", map_location=device))
epoch = load_checkpoint(model, "last.pt")
```
becomes
```python
raw_model.load_state_dict(torch.load("best.pt", map_location=device))
epoch = load_checkpoint(raw_model, "last.pt")
```
(`raw_model` is the handle kept before wrapping; for an unconditional wrap the script already had,
`model.module`.) Loads before the wrap are already correct and are left alone; a helper that only
loads into the model counts as a preparation, so the wrap goes after it. So is a script that keeps
the prefix on purpose: it wraps the model itself and loads into the wrapper the file it saves from
the wrapper (the same path: a resume), or adds the prefix itself (`loaded["module." + key] = value`).

## Fix safety
Safe: the unwrapped model takes exactly the keys a plain run saves, in both launch modes, and DDP
shares its parameters, so the wrapper sees the loaded weights. Diagnostic only: a rank-0-only load
after the wrap (load on every rank, before wrapping), a helper that trains through the model, a
helper that hands the model back where the script keeps what it returns (`model =
load_checkpoint(model, path)`: passing the plain module would put it in the wrapper's place), and a
use where no name reaches the plain module. A name bound again after the wrap (`model = Net()`,
`model = load_model(path)`) is no longer the wrapper and is left alone.

For a wrap that this conversion adds (DDP301), the fix comes at that wrap's level: none where DDP301
cannot wrap the model here, unsafe where the wrap is made only with `--unsafe-fixes`.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        handles = wrappers(ctx)
        for call in facts.names.method_calls("load_state_dict"):
            recv = receiver(call)
            handle = dotted(recv) if recv is not None else None
            if handle not in handles:
                continue
            raw, wrap_stmt = handles[handle]
            if not facts.wraps.after_wrap(call, handle, wrap_stmt):
                continue
            if keys_kept(ctx, handle, wrap_stmt) or handles_prefix(ctx, call):
                continue  # a resume through the wrapper, or keys given the prefix by hand
            spelled = raw_at(ctx, handle, raw, wrap_stmt, call)
            if facts.ranks.rank_guarded(call):
                ctx.report(
                    call,
                    f"{handle}.load_state_dict() on rank 0 only, after the DDP wrap: the other ranks keep the old weights; "
                    f"load on every rank through {spelled or 'the plain module'}, or before wrapping",
                    fix="none",
                )
                continue
            if spelled is None:
                ctx.report(
                    call,
                    f"{handle}.load_state_dict() loads into the DDP wrapper ('module.' keys expected), and no name "
                    "reaches the plain module here: keep one before wrapping and load through it",
                    fix="none",
                )
                continue
            said = once_wrapped(
                ctx,
                handle,
                f"{handle}.load_state_dict() loads into the DDP wrapper ('module.' keys expected)",
                f"{handle}.load_state_dict() would load into the wrapper, which expects 'module.' keys",
            )
            level, why = wrap_level(ctx, handle)
            if ctx.report(call, f"{said}: use {spelled}.load_state_dict(){why}", fix=level):
                ctx.plan.replace(call.func, lambda n, s=spelled: n.with_changes(value=cst.parse_expression(s)))
        for hand in handoffs(ctx):
            if hand.code != self.code:
                continue
            callee = code_of(hand.call.func)
            if not hand.fixable:
                why = hand.why
                ctx.report(
                    hand.arg.value,
                    f"{callee}() loads a state_dict into {hand.handle}, the DDP wrapper ('module.' keys expected); pass "
                    f"the plain module on every rank ({why}: by hand)",
                    fix="none",
                )
                continue
            if ctx.report(
                hand.arg.value,
                f"{callee}() loads a state_dict into {hand.handle}, the DDP wrapper ('module.' keys expected): pass {hand.raw}",
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
        model = DDP(nn.Linear(4, 1))
        model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        model.module.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A plain checkpoint loads into the module the wrapper holds:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        if dist.get_rank() == 0:
            model.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "model.load_state_dict() on rank 0 only, after the DDP wrap: the other ranks keep the old "
            "weights; load on every rank through model.module, or before wrapping"
        ),
        note=(
            "Reported without a fix: after the wrap, a load on rank 0 alone leaves the other ranks on their "
            "old weights:"
        ),
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        net = nn.Linear(4, 1)
        net.load_state_dict(torch.load("pretrained.pt", map_location="cpu"))
        model = DDP(net)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Loaded before the wrap, into the plain module:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        if os.path.exists("last.pt"):
            ckpt = torch.load("last.pt", map_location="cpu")
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["opt"])
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if dist.get_rank() == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, "last.pt")
        """,
        note="A resume through the wrapper: the file it saves is the file it loads, with 'module.' keys on both sides:",
    ),
)
