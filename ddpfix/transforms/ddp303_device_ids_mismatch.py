"""DDP303: `device_ids` that do not match the module: set on a CPU module, or a list of several GPUs."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.cuda_paths import cuda_only_path
from ..edits import cuda_test
from ..examples import clean, fixes
from ..rule import Context, Rule
from ..syntax import (
    assigned_value,
    calls_in,
    code_of,
    dotted,
    is_literal,
    kwarg,
    method_name,
    positional,
    receiver,
    string_value,
)


class DeviceIdsMismatch(Rule):
    code = "DDP303"
    name = "device-ids-mismatch"
    message = "DDP device_ids do not match the module's device"
    docs = """
## What
`DistributedDataParallel(model, device_ids=...)` where
- `device_ids` is set unconditionally in a script that also runs on CPU (it picks `"cpu"` when CUDA
  is not available), on a path where the module can be on CPU, or
- `device_ids` lists several GPUs (`[0, 1]`, `list(range(n))`): the DataParallel habit.

## Why
On a CPU module DDP refuses to start: `ValueError: DistributedDataParallel device_ids and
output_device arguments only work with single-device/multiple-device GPU modules or CPU modules, but
got device_ids [0], output_device None, and module parameters {device(type='cpu')}.` With several
GPUs per process DDP fails too (multi-device replication was removed): one process drives one GPU,
`device_ids=[LOCAL_RANK]`.

## Example
```python
model = DDP(model, device_ids=[LOCAL_RANK])
model = DDP(model, device_ids=[0, 1])
```
become
```python
model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
```
`output_device`, when given, gets the same condition. The test is the script's own
`device.type == "cuda"` when it has a `torch.device`, else `next(model.parameters()).is_cuda`.

## Fix safety
Safe: on CUDA the arguments are unchanged (or name the process's own GPU), on CPU they are `None`,
which is what DDP requires. A wrap without `device_ids` is not reported: PyTorch accepts `None`
for a module on a single device. Neither is a module moved with `.cuda(...)`, `.to("cuda...")` or
`.to(device)` with `device = torch.device("cuda", rank)` (in the call or where its name was bound
before, through later `.to(dtype)` rebinds): it is on CUDA whatever else the script does. Nor a
wrap on a path that needs a GPU by design: after `torch.cuda.set_device(...)`,
`init_process_group("nccl")`, `assert torch.cuda.is_available()` or `if not
torch.cuda.is_available(): raise ...` in its function (or in a function of this file it calls
first, such as `ddp_setup(rank, world_size)`), under no `if` the wrap is not under too. Nor a wrap
in a script that joins its process group only through helpers of its own modules that commit to a
GPU before they join (`utils.init_distributed_mode(args)` calling `torch.cuda.set_device(args.gpu)`
first): the wrap needs that group, so it runs on CUDA.
Without a `torch.device` in scope and with a module that is not a plain name
(`DDP(copy.deepcopy(net), ...)`), the finding has no fix.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        cpu_capable = any(
            value == "cpu" and not _loads_onto(facts, node) for node, value in facts.names.string_literals("cpu")
        ) or any(_chooses_device(facts, c) for c in facts.names.calls_to("torch.cuda.is_available"))
        for call in facts.models.ddp_calls:
            ids = kwarg(call, "device_ids") or positional(call, 1)
            if ids is None or is_literal(ids.value, None) or isinstance(ids.value, cst.IfExp):
                continue
            module = positional(call, 0) or kwarg(call, "module")
            if module is None:
                continue
            handle = _base(module.value)
            several = _several(ids.value)
            if not several and (
                not cpu_capable
                or _on_cuda(facts, module.value, call)
                or cuda_only_path(facts.index, facts.names, call)
                or facts.launch.joins_only_on_cuda
            ):
                continue
            dev = facts.models.device_var(call)
            if (dev is None or not dev[1]) and handle is None:
                ctx.report(
                    ids, "device_ids set on a module that may be on CPU: pass them only when it is on CUDA", fix="none"
                )
                continue
            cuda = cst.parse_expression(cuda_test(ctx, handle or "model", call))
            if several:
                message = f"device_ids={code_of(ids.value)}: one DDP process drives one GPU; use [LOCAL_RANK] on CUDA, None on CPU"
            else:
                message = (
                    f"device_ids={code_of(ids.value)} also on CPU, where DDP raises 'device_ids and output_device arguments "
                    "only work with single-device/multiple-device GPU modules or CPU modules'"
                )
            if not ctx.report(ids, message):
                continue
            local_rank = cst.parse_expression(ctx.env("LOCAL_RANK")) if several else None
            ctx.plan.replace(
                ids.value, _on_cuda_only(cuda, cst.List([cst.Element(local_rank)]) if local_rank else None)
            )
            out = kwarg(call, "output_device") or positional(call, 2)
            if out is not None and not is_literal(out.value, None) and not isinstance(out.value, cst.IfExp):
                ctx.plan.replace(out.value, _on_cuda_only(cuda, local_rank))


def _on_cuda_only(cuda: cst.BaseExpression, value: cst.BaseExpression | None):
    """`x` -> `x if <cuda> else None` (or `value if <cuda> else None`), on the node as other fixes left it."""

    def rewrite(node: cst.BaseExpression) -> cst.BaseExpression:
        return cst.IfExp(test=cuda, body=value or node, orelse=cst.Name("None"))

    return rewrite


MODULE_METHODS = {"to", "cuda", "float", "half", "double", "bfloat16", "train", "eval", "requires_grad_"}


def _base(expr: cst.BaseExpression) -> str | None:
    """`model`, `model.to(device)`, `model.cuda()` -> "model"; None when the module is not a name."""
    while isinstance(expr, cst.Call) and method_name(expr) in MODULE_METHODS:
        expr = receiver(expr)  # type: ignore[assignment]
    return dotted(expr)


def _on_cuda(facts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """The module is moved to CUDA unconditionally: `net.cuda(rank)`, `net.to("cuda:0")`, or a name
    last bound to such an expression before `at` in the same scope."""
    while isinstance(expr, cst.Call) and method_name(expr) in MODULE_METHODS:
        if method_name(expr) == "cuda" or (method_name(expr) == "to" and _names_cuda(facts, expr)):
            return True
        expr = receiver(expr)  # type: ignore[assignment]
    name = dotted(expr)
    if name is None or depth > 3:
        return False
    here = facts.index.site(at).stmt
    defs = [
        d
        for d in facts.names.assignments(facts.index.scope_of(at), name)
        if facts.index.before(d.stmt, at) and d.stmt is not here
    ]
    value = assigned_value(defs[-1].stmt) if defs else None
    # `model = model.to(torch.bfloat16)` after `model = model.to(device)`: the earlier binding tells
    return value is not None and _on_cuda(facts, value, defs[-1].stmt, depth + 1)


def _names_cuda(facts, call: cst.Call) -> bool:
    arg = positional(call, 0) or kwarg(call, "device")
    if arg is None:
        return False
    value = arg.value
    name = dotted(value)
    if isinstance(value, cst.Name) and name is not None:  # `device = torch.device("cuda", rank)` before
        defs = [
            d for d in facts.names.assignments(facts.index.scope_of(call), name) if facts.index.before(d.stmt, call)
        ]
        if len(defs) == 1 and assigned_value(defs[0].stmt) is not None:
            value = assigned_value(defs[0].stmt)
    if isinstance(value, cst.Call) and facts.names.call_qual(value) == "torch.device":
        first = positional(value, 0)
        value = first.value if first is not None else value
    if isinstance(value, cst.FormattedString) and value.parts and isinstance(value.parts[0], cst.FormattedStringText):
        return value.parts[0].value.startswith("cuda")
    text = string_value(value)
    return text is not None and text.startswith("cuda")


def _loads_onto(facts, string: cst.SimpleString) -> bool:
    """`torch.load(..., map_location="cpu")` says where a checkpoint's tensors land, not the model."""
    arg = facts.index.parent.get(string)
    return isinstance(arg, cst.Arg) and arg.keyword is not None and arg.keyword.value == "map_location"


BACKEND = re.compile(r"((cpu|cuda):)?(nccl|gloo|mpi|ucc)")


def is_backend(value) -> bool:
    """`"nccl"`, `"gloo"`, `"cpu:gloo,cuda:nccl"`: a process-group backend, not a device."""
    return isinstance(value, str) and all(BACKEND.fullmatch(part) for part in value.split(","))


def _chooses_device(facts, test: cst.Call) -> bool:
    """False for the two CUDA tests that choose no device for the model: the guard around
    `torch.cuda.set_device(...)` and the backend choice (`"cpu:gloo,cuda:nccl" if torch.cuda.is_available() else "gloo"`)."""
    parent = facts.index.parent.get(test)
    if isinstance(parent, cst.IfExp) and parent.test is test:
        return not all(
            isinstance(v, cst.SimpleString) and is_backend(v.evaluated_value) for v in (parent.body, parent.orelse)
        )
    if isinstance(parent, cst.If) and parent.test is test and not parent.orelse:
        calls = [facts.names.call_qual(c) for c in calls_in(parent.body)]
        return calls != ["torch.cuda.set_device"]
    return True


def _several(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return len(expr.elements) > 1 or any(isinstance(e, cst.StarredElement) for e in expr.elements)
    if isinstance(expr, cst.Call) and dotted(expr.func) in ("list", "range", "tuple"):
        return True
    return False


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        model = DDP(nn.Linear(4, 1).to(device), device_ids=[LOCAL_RANK])
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
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        model = DDP(nn.Linear(4, 1).to(device), device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="`device_ids` only on CUDA: on a CPU host the same script still starts:",
    ),
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        model = nn.Linear(4, 1).to(device)
        model = DDP(model, device_ids=[0, 1])
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
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        model = nn.Linear(4, 1).to(device)
        model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="The DataParallel habit of listing every GPU: one process drives one GPU:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        torch.cuda.set_device(LOCAL_RANK)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[LOCAL_RANK])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A GPU-only script: the module is on CUDA whatever happens:",
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if int(os.environ.get("WORLD_SIZE", 1)) > 1:
            torch.cuda.set_device(LOCAL_RANK)
            dist.init_process_group("nccl")
        model = nn.Linear(4, 1).to(device)
        if int(os.environ.get("WORLD_SIZE", 1)) > 1:
            model = DDP(model, device_ids=[LOCAL_RANK])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4, device=device)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A script that runs on CPU alone, but distributed only on GPUs: its distributed path is CUDA by design:",
    ),
)
