"""DDP002: init_process_group("nccl") with no CPU fallback."""

from __future__ import annotations

import libcst as cst

from ..analysis.summaries import HARDCODED_BACKEND
from ..edits import backend_choice, torch_name
from ..examples import clean, fixes
from ..rule import NONE, Context, Rule
from ..syntax import assigned_value, dotted, kwarg, positional, string_value


class HardcodedBackend(Rule):
    code = "DDP002"
    name = "hardcoded-backend"
    message = 'backend "nccl" is hard-coded: the script cannot run on a machine without GPUs'
    docs = """
## What
`dist.init_process_group("nccl")` (or `backend="nccl"`) with a literal backend, on a path that
could otherwise run without GPUs.

A path that needs CUDA whatever the backend is not reported: where something that fails without
a GPU always runs together with the join (in the same function and branch, in the functions that
call it, or at the top of a function of this file either calls): `torch.cuda.set_device(...)`,
`.cuda()`, `.to(device)` of a device that is CUDA on every binding (`torch.device(f"cuda:{rank}")`),
or `assert torch.cuda.is_available()`. Such a script is CUDA-only by design; NCCL does not make it
worse. A `set_device` under `if torch.cuda.is_available():`, or a `.cuda()` only on the
single-process branch, is no such commitment: the distributed path can still run on CPU.

## Why
On a CPU-only host (a laptop, CI, a CPU node) NCCL fails at once:
`ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!`

## Example
```python
dist.init_process_group(backend="nccl")
```
becomes
```python
dist.init_process_group(backend="cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
```
With CUDA the process group has both backends: NCCL for CUDA tensors, gloo for CPU ones, so a model
the script keeps on the CPU (a `--cuda` flag that is off) still trains (a plain `"nccl"` group fails
there with `RuntimeError: No backend type associated with device type cpu`).

A backend the script names as a setting stays its choice: the default of an option
(`parser.add_argument("--dist-backend", default="nccl")`) or a variable (`BACKEND = "nccl"`) becomes
`"nccl" if torch.cuda.is_available() else "gloo"`, so a CPU-only run gets gloo and an explicit
`--dist-backend` is honoured as given. A helper of the script's own modules that hard-codes
`"nccl"` is reported where the script calls it, naming the file and line to change.

## Fix safety
Safe: on GPU machines CUDA tensors still go through NCCL. No fix in another file: the helper's
finding has none.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for call in facts.launch.init_calls:
            arg = kwarg(call, "backend") or positional(call, 0)
            if arg is None or facts.device_path.cuda_only(call) is not None:
                continue  # a path that needs a GPU anyway is not made worse by NCCL
            if string_value(arg.value) == "nccl":
                if not ctx.report(arg.value):
                    continue
                quote = arg.value.quote if isinstance(arg.value, cst.SimpleString) else '"'
                expr = cst.parse_expression(backend_choice(ctx, quote))
                ctx.plan.replace(arg.value, lambda n, e=expr: e)
                continue
            setting = _setting(facts, arg.value)
            if setting is None:
                continue
            literal, what = setting
            if ctx.report(literal, f'backend "nccl" comes from {what}: a run on a machine without GPUs fails'):
                quote = literal.quote if isinstance(literal, cst.SimpleString) else '"'
                expr = cst.parse_expression(
                    f"{quote}nccl{quote} if {torch_name(ctx)}.cuda.is_available() else {quote}gloo{quote}"
                )
                ctx.plan.replace(literal, lambda n, e=expr: e)
        for call in facts.launch.helper_joins:
            if facts.device_path.cuda_only(call) is not None:
                continue
            for found in facts.modules.findings(call, HARDCODED_BACKEND):
                ctx.report(
                    call,
                    f'{dotted(call.func)}() joins the process group with backend "nccl" hard-coded '
                    f"({found.path.name}:{found.line}): a run on a machine without GPUs fails; fix it there",
                    fix=NONE,
                )


def _setting(facts, expr: cst.BaseExpression) -> tuple[cst.SimpleString, str] | None:
    """The literal "nccl" a backend argument takes from the script's own settings: the default of an
    argparse option (`args.dist_backend`), or a variable assigned once (`BACKEND = "nccl"`)."""
    option = facts.launch.options.of(expr)
    if option is not None:
        if option.default is not None and string_value(option.default.value) == "nccl":
            return option.default.value, f"the default of {option.flags[0]}"  # type: ignore[return-value]
        return None
    if isinstance(expr, cst.Name):
        func = facts.index.enclosing(expr, cst.FunctionDef)
        params = [*func.params.params, *func.params.kwonly_params] if isinstance(func, cst.FunctionDef) else []
        for p in params:  # def setup(rank, world_size, backend="nccl")
            if p.name.value == expr.value:
                if p.default is not None and string_value(p.default) == "nccl":
                    return p.default, f"the default of the parameter `{expr.value}`"  # type: ignore[return-value]
                return None
        sites = facts.names.assignments(facts.index.scope_of(expr), expr.value) or facts.names.assignments(
            facts.module, expr.value
        )
        if len(sites) == 1:
            value = assigned_value(sites[0].stmt)
            if value is not None and string_value(value) == "nccl":
                return value, f"`{expr.value}`"  # type: ignore[return-value]
    return None


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group(backend="nccl")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group(backend="cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="The backend follows the hardware:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="A backend the script already chooses at run time:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group(backend="nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="A script that needs a GPU whatever happens (`set_device`, `.cuda()`): NCCL makes it no worse:",
    ),
    fixes(
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--backend", default="nccl")
        args = parser.parse_args()
        dist.init_process_group(backend=args.backend)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        parser = argparse.ArgumentParser()
        parser.add_argument("--backend", default="nccl" if torch.cuda.is_available() else "gloo")
        args = parser.parse_args()
        dist.init_process_group(backend=args.backend)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="A backend option whose default is NCCL: the default follows the hardware, a --backend given is kept:",
    ),
)
