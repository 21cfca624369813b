"""DDP007: "cuda:0", .cuda(0), .to(0), device = 0 pin every rank to GPU 0."""

from __future__ import annotations

import re

import libcst as cst

from ..examples import clean, fixes, reports
from ..rule import Context, Rule
from ..syntax import method_name, positional

CUDA_LITERAL = re.compile(r"^cuda:(\d+)$")
DEVICE_VAR = re.compile(r"^(device|gpu|gpu_id|device_id|cuda_device|local_device)$", re.IGNORECASE)


class HardcodedCudaDevice(Rule):
    code = "DDP007"
    distributed_only = True
    name = "hardcoded-cuda-device"
    message = "hard-coded CUDA device: every rank would use this GPU; use LOCAL_RANK"
    docs = """
## What
`"cuda:0"`, `.cuda(0)`, `.to(0)`, `torch.device("cuda", 0)` or `device = 0`.

## Why
Under `torchrun` all processes then put their model and batches on GPU 0: out-of-memory on that
GPU, idle others, and with NCCL `Duplicate GPU detected : rank 1 and rank 0 both on CUDA device`.
A bare `"cuda"` / `.cuda()` means the current device and is correct once `set_device` ran.

## Example
```python
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
```
becomes
```python
device = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")
```

## Fix safety
Safe when the script uses one GPU. A script that names several GPU indices (model parallelism)
gets the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        sites: list[tuple[cst.CSTNode, int, str]] = []  # node, index, kind
        for s, value in facts.names.string_literals("cuda"):
            m = CUDA_LITERAL.match(value)
            if m and "f" not in s.prefix.lower() and "b" not in s.prefix.lower():
                up = facts.index.parent.get(s)
                if isinstance(up, cst.DictElement) and up.key is s:
                    continue  # map_location={"cuda:0": f"cuda:{rank}"}: the device a checkpoint was saved from
                sites.append((s, int(m.group(1)), "string"))
        for call in facts.index.calls:
            if method_name(call) in ("cuda", "to") and len(call.args) >= 1:
                arg = positional(call, 0)
                if arg is not None and isinstance(arg.value, cst.Integer):
                    sites.append((arg.value, int(arg.value.value), "int"))
            if facts.names.call_qual(call) == "torch.device" and len(call.args) == 2:
                arg = positional(call, 1)
                if arg is not None and isinstance(arg.value, cst.Integer):
                    sites.append((arg.value, int(arg.value.value), "int"))
        for small in _int_assignments(facts):
            sites.append((small.value, int(small.value.value), "int"))
        if not sites:
            return
        indices = {i for _, i, _ in sites}
        several = len(indices) > 1
        for node, index, kind in sites:
            if several:
                ctx.report(
                    node,
                    f"hard-coded CUDA device {index}: the script uses several GPUs on purpose? map each to LOCAL_RANK by hand",
                    fix="none",
                )
                continue
            if not ctx.report(node):
                continue
            local = ctx.env("LOCAL_RANK")
            if kind == "string":
                ctx.plan.replace(node, lambda n, local=local: _fstring(n, local))
            else:
                ctx.plan.replace(node, lambda n, local=local: cst.Name(local))


def _fstring(node: cst.SimpleString, local: str) -> cst.BaseExpression:
    quote = node.quote
    return cst.parse_expression(f"f{quote}cuda:{{{local}}}{quote}")


def _int_assignments(facts) -> list[cst.Assign]:
    """`device = 0`, `gpu_id = 0`: an integer literal bound to a device-like name."""
    out = []
    for node in facts.index.assigns:
        if isinstance(node.value, cst.Integer) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name) and DEVICE_VAR.match(target.value):
                out.append(node)
    return out


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device(f"cuda:{LOCAL_RANK}" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1).to(device))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Each rank's device is its own GPU:",
    ),
    reports(
        """
        import torch
        import torch.nn as nn


        class TwoStage(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = nn.Linear(4, 8).to("cuda:0")
                self.second = nn.Linear(8, 1).to("cuda:1")

            def forward(self, x):
                return self.second(self.first(x.to("cuda:0")).to("cuda:1"))


        model = TwoStage()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="Reported without a fix: a model split over several GPUs on purpose needs its own mapping to local ranks:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        if torch.cuda.is_available():
            torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo")
        model = DDP(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A bare `.cuda()` is the current device, which `set_device` chose:",
    ),
)
