"""DDP002: init_process_group("nccl") with no CPU fallback."""

from __future__ import annotations

import libcst as cst

from ..edits import backend_choice
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import kwarg, positional, string_value


class HardcodedBackend(Rule):
    code = "DDP002"
    name = "hardcoded-backend"
    message = 'backend "nccl" is hard-coded: the script cannot run on a machine without GPUs'
    docs = """
## What
`dist.init_process_group("nccl")` (or `backend="nccl"`) with a literal backend.

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

## Fix safety
Safe: on GPU machines CUDA tensors still go through NCCL.
"""

    def run(self, ctx: Context) -> None:
        for call in ctx.facts.launch.init_calls:
            arg = kwarg(call, "backend") or positional(call, 0)
            if arg is None or string_value(arg.value) != "nccl":
                continue
            if not ctx.report(arg.value):
                continue
            quote = arg.value.quote if isinstance(arg.value, cst.SimpleString) else '"'
            expr = cst.parse_expression(backend_choice(ctx, quote))
            ctx.plan.replace(arg.value, lambda n, e=expr: e)


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
        note="A backend the user picks on the command line (`--backend gloo` on a CPU host):",
    ),
)
