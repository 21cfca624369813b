"""DDP009: the script's own launch path does not start under torchrun as written."""

from __future__ import annotations

import libcst as cst

from ..edits import with_kwarg
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import code_of, string_value


class OwnLaunchPath(Rule):
    code = "DDP009"
    name = "own-launch-path"
    message = "the script's own launch path does not start under torchrun as written"
    docs = """
## What
A script that joins its process group its own way, in a form torchrun does not drive: a
`--local_rank` option whose default is a constant (`default=-1`). `torch.distributed.launch` passed
it on the command line; torchrun does not (it sets `LOCAL_RANK` in the environment), so under
torchrun the script never takes its distributed path.

## Why
Under torchrun a `--local_rank` left at `-1` means `if args.local_rank != -1:` is never true: every
process trains alone on the whole dataset, with no error. torch 2.x's `torch.distributed.launch`
passes `--local-rank` (with a hyphen), which a parser that only knows `--local_rank` rejects with
`error: unrecognized arguments: --local-rank=0`.

## Example
```python
parser.add_argument("--local_rank", type=int, default=-1)
```
becomes
```python
parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
```
The option keeps working as before; without it the value comes from torchrun's environment, and
without either (a plain `python train.py`) it is the old default.

A script that starts its own processes with `mp.spawn` is not reported: it runs with `python
train.py`, as its author runs it, and ddpfix completes the spawned path where it is (set_device,
sampler, DDP wrap, one writer; DISTRIBUTED and RANK are decided at run time there,
`dist.is_initialized()`), each addition with its own finding. Converting it to torchrun (dropping
`mp.spawn`, changing the worker's signature) is a restructuring left to you; a spawn target with
the wrong signature is DDP004.

## Fix safety
Safe: the option keeps its flag and its value when given; only its default reads the environment.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        launch = facts.launch
        option = launch.options.by_dest.get("local_rank")
        if option is not None and launch.init_calls and _constant_default(option.default):
            old = code_of(option.default.value) if option.default is not None else "-1"
            if ctx.report(
                option.call, "--local_rank is set by torch.distributed.launch, not by torchrun: read LOCAL_RANK"
            ):
                os_name = ctx.plan.ref("os", "os", style="import")
                expr = cst.parse_expression(f'int({os_name}.environ.get("LOCAL_RANK", {old}))')
                ctx.plan.replace(option.call, lambda n, e=expr, o=option: _with_flags(with_kwarg(n, "default", e), o))


def _constant_default(default: cst.Arg | None) -> bool:
    """No default, or a number: nothing reads the environment."""
    if default is None:
        return True
    value = default.value
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    return isinstance(value, cst.Integer)


def _with_flags(call: cst.Call, option) -> cst.Call:
    """`--local-rank` next to `--local_rank` (torch 2.x's torch.distributed.launch passes the former)."""
    flags = set(option.flags)
    if "--local-rank" in flags or "--local_rank" not in flags:
        return call
    args = list(call.args)
    i = next(i for i, a in enumerate(args) if a.keyword is None and string_value(a.value) == "--local_rank")
    quote = args[i].value.quote  # type: ignore[attr-defined]
    new = args[i].with_changes(value=cst.SimpleString(f"{quote}--local-rank{quote}"))
    args.insert(i + 1, new)
    args[i] = args[i].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=args)


EXAMPLES = (
    fixes(
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", type=int, default=-1)
        args = parser.parse_args()
        if args.local_rank != -1:
            dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if args.local_rank != -1:
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import argparse
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
        args = parser.parse_args()
        if args.local_rank != -1:
            dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if args.local_rank != -1:
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="torchrun passes no --local_rank: the default now comes from its LOCAL_RANK, and torch 2's spelling works:",
    ),
    clean(
        """
        import argparse
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))
        args = parser.parse_args()
        if args.local_rank != -1:
            dist.init_process_group("gloo")
        model = nn.Linear(4, 1)
        if args.local_rank != -1:
            model = DDP(model)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="The option already reads torchrun's environment:",
    ),
)
