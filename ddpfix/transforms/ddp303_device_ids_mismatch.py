"""DDP303: `device_ids` that do not match the module: set on a CPU module, or a list of several GPUs."""
from __future__ import annotations

import libcst as cst

from ..edits import cuda_test
from ..rule import Context, Rule
from ..syntax import code_of, dotted, is_literal, kwarg, positional, receiver


class DeviceIdsMismatch(Rule):
    code = "DDP303"
    name = "device-ids-mismatch"
    message = "DDP device_ids do not match the module's device"
    docs = """
## What
`DistributedDataParallel(model, device_ids=...)` where
- `device_ids` is set unconditionally in a script that also runs on CPU (it picks `"cpu"` when CUDA
  is not available), or
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
for a module on a single device.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        cpu_capable = any(s.evaluated_value == "cpu" for s in facts.strings if isinstance(s.evaluated_value, str)) or bool(
            facts.calls_to("torch.cuda.is_available")
        )
        for call in facts.ddp_calls:
            ids = kwarg(call, "device_ids") or positional(call, 1)
            if ids is None or is_literal(ids.value, None) or isinstance(ids.value, cst.IfExp):
                continue
            module = positional(call, 0) or kwarg(call, "module")
            if module is None:
                continue
            handle = _base(module.value)
            several = _several(ids.value)
            if not several and not cpu_capable:
                continue
            dev = facts.device_var(call)
            if (dev is None or not dev[1]) and handle is None:
                ctx.report(ids, "device_ids set on a module that may be on CPU: pass them only when it is on CUDA", fix="none")
                continue
            cuda = cuda_test(ctx, handle or "model", call)
            if several:
                message = f"device_ids={code_of(ids.value)}: one DDP process drives one GPU; use [LOCAL_RANK] on CUDA, None on CPU"
            else:
                message = (
                    f"device_ids={code_of(ids.value)} also on CPU, where DDP raises 'device_ids and output_device arguments "
                    "only work with single-device/multiple-device GPU modules or CPU modules'"
                )
            if not ctx.report(ids, message):
                continue
            value = f"[{ctx.env('LOCAL_RANK')}]" if several else code_of(ids.value)
            new_ids = cst.parse_expression(f"{value} if {cuda} else None")
            out = kwarg(call, "output_device") or positional(call, 2)
            new_out = None
            if out is not None and not is_literal(out.value, None) and not isinstance(out.value, cst.IfExp):
                out_value = ctx.env("LOCAL_RANK") if several else code_of(out.value)
                new_out = cst.parse_expression(f"{out_value} if {cuda} else None")

            def rewrite(node: cst.Call, ids=ids, out=out, new_ids=new_ids, new_out=new_out) -> cst.Call:
                args = []
                for a in node.args:
                    if a.deep_equals(ids):
                        a = a.with_changes(value=new_ids)
                    elif new_out is not None and out is not None and a.deep_equals(out):
                        a = a.with_changes(value=new_out)
                    args.append(a)
                return node.with_changes(args=args)

            ctx.plan.replace(call, rewrite)


def _base(expr: cst.BaseExpression) -> str | None:
    """`model`, `model.to(device)`, `model.cuda()` -> "model"."""
    while isinstance(expr, cst.Call) and receiver(expr) is not None:
        expr = receiver(expr)  # type: ignore[assignment]
    return dotted(expr)


def _several(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return len(expr.elements) > 1 or any(isinstance(e, cst.StarredElement) for e in expr.elements)
    if isinstance(expr, cst.Call) and dotted(expr.func) in ("list", "range", "tuple"):
        return True
    return False
