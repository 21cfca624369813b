"""DDP308: a custom method or attribute of the model reached through the DDP wrapper."""

from __future__ import annotations

import libcst as cst

from ..examples import clean, fixes, reports
from ..handles import wrappers
from ..rule import Context, Rule
from ..syntax import dotted, walk

# What the wrapper answers itself: nn.Module's API and DistributedDataParallel's own members.
WRAPPER_API = {
    "forward",
    "module",
    "no_sync",
    "join",
    "join_hook",
    "register_comm_hook",
    "static_graph",
    "device_ids",
    "require_backward_grad_sync",
    "require_forward_param_sync",
    "process_group",
    "find_unused_parameters",
    "parameters",
    "named_parameters",
    "buffers",
    "named_buffers",
    "children",
    "named_children",
    "modules",
    "named_modules",
    "state_dict",
    "load_state_dict",
    "train",
    "eval",
    "training",
    "zero_grad",
    "to",
    "cuda",
    "cpu",
    "xpu",
    "float",
    "double",
    "half",
    "bfloat16",
    "type",
    "apply",
    "requires_grad_",
    "share_memory",
    "register_buffer",
    "register_parameter",
    "register_module",
    "add_module",
    "get_submodule",
    "get_parameter",
    "get_buffer",
    "register_forward_hook",
    "register_forward_pre_hook",
    "register_full_backward_hook",
    "register_backward_hook",
    "register_full_backward_pre_hook",
    "extra_repr",
    "to_empty",
    "compile",
    "__call__",
    "__class__",
    "__dict__",
    "_modules",
    "_parameters",
    "_buffers",
}


class WrapperAttributeAccess(Rule):
    code = "DDP308"
    name = "wrapper-attribute-access"
    message = "custom model attribute reached through the DDP wrapper: DistributedDataParallel does not forward it"
    reads = frozenset({"wraps"})
    docs = """
## What
A method or attribute that the model's own class defines (`model.generate(...)`, `model.encoder`,
`model.num_classes`), used on a handle that is (or becomes, once wrapped) the
`DistributedDataParallel` wrapper.

## Why
The wrapper is a different module: it has `forward`, `parameters()`, `state_dict()` and the rest of
`nn.Module`'s API, but not your methods or submodules. Under `torchrun` the script stops with
`AttributeError: 'DistributedDataParallel' object has no attribute 'generate'`, while a plain run
(where the wrap is skipped) works.

## Example
```python
raw_model = model
if DISTRIBUTED:
    model = DDP(model, device_ids=[LOCAL_RANK] if device.type == "cuda" else None)
...
samples = model.generate(prompt)
```
becomes
```python
samples = raw_model.generate(prompt)
```
(`raw_model` is the handle kept before wrapping; for an unconditional wrap the script already had,
`model.module`.)

## Fix safety
Safe: the unwrapped module is the object the wrapper holds, with the same parameters. Only names the
model's class in this file defines (methods, `self.` attributes, also of in-file base classes) are
rewritten; attributes assigned through the wrapper itself are left alone. A use inside another
function that receives the wrapper as a parameter gets the diagnostic only.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for handle, (raw, wrap_stmt) in wrappers(ctx).items():
            base = raw[: -len(".module")] if raw.endswith(".module") else raw
            cls = facts.models.model_class(base, wrap_stmt) or facts.models.model_class(handle, wrap_stmt)
            if cls is None:
                continue
            methods, attrs = facts.models.class_members(cls)
            custom = {n for n in (methods | attrs) - WRAPPER_API if not n.startswith("__")}
            uses = [n for n in _attributes(facts.module) if n.attr.value in custom]
            stored = {
                n.attr.value
                for n in uses
                if dotted(n.value) == handle and isinstance(facts.index.parent.get(n), cst.AssignTarget)
            }
            wrap_func = facts.index.enclosing(wrap_stmt, cst.FunctionDef)
            for node in uses:
                name, owner = node.attr.value, dotted(node.value)
                if name in stored or isinstance(facts.index.parent.get(node), cst.AssignTarget):
                    continue
                if owner == handle and facts.wraps.after_wrap(node, handle, wrap_stmt):
                    if ctx.report(
                        node, f"{handle}.{name}: the DDP wrapper has no attribute '{name}'; use {raw}.{name}"
                    ):
                        ctx.plan.replace(node, lambda n, raw=raw: n.with_changes(value=cst.parse_expression(raw)))
                    continue
                func = facts.index.enclosing(node, cst.FunctionDef)
                if owner is None or "." in owner or not isinstance(func, cst.FunctionDef) or func is wrap_func:
                    continue
                if owner in facts.data.params_bound_to(func, handle) and _only_called_wrapped(
                    facts, func, handle, wrap_stmt
                ):
                    ctx.report(
                        node,
                        f"{owner}.{name}: {owner} is the DDP wrapper here, which has no attribute '{name}'; pass {raw} or use {owner}.module",
                        fix="none",
                    )


def _attributes(module: cst.Module):
    return (n for n in walk(module) if isinstance(n, cst.Attribute))


def _only_called_wrapped(facts, func: cst.FunctionDef, handle: str, wrap_stmt: cst.CSTNode) -> bool:
    """Every call of `func` that passes `handle` runs after the wrap."""
    sites = [
        c
        for c in facts.index.calls
        if facts.index.callee_of(c) is func and any(dotted(a.value) == handle for a in c.args)
    ]
    return bool(sites) and all(facts.wraps.after_wrap(c, handle, wrap_stmt) for c in sites)


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(model.predict(torch.randn(2, 4)))
        """,
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        print(model.module.predict(torch.randn(2, 4)))
        """,
        note="The model's own method goes through the module the wrapper holds:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        def report(net):
            print(net.predict(torch.randn(2, 4)))


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        report(model)
        """,
        message=(
            "net.predict: net is the DDP wrapper here, which has no attribute 'predict'; pass model.module or "
            "use net.module"
        ),
        note="Reported without a fix: the helper gets the wrapper as a parameter; pass it the plain module:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Linear):
            def predict(self, x):
                return self(x) > 0


        dist.init_process_group("gloo")
        model = DDP(Net(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        print(model.module.predict(torch.randn(2, 4)))
        """,
        note="`nn.Module`'s own API (`eval()`) works on the wrapper; the custom method already goes through `.module`:",
    ),
)
