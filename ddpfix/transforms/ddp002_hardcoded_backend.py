"""DDP002: init_process_group("nccl") with no CPU fallback."""

from __future__ import annotations

import libcst as cst

from ..edits import backend_choice
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
