"""DDP310: submodules whose parameters never take part in forward (static hint)."""

from __future__ import annotations

import re

import libcst as cst

from ..diagnostic import NONE
from ..examples import clean, reports
from ..rule import Context, Rule
from ..syntax import assigned_value, dotted, is_literal, kwarg, walk

PARAMETERLESS = re.compile(
    r"Pool|ReLU$|ELU$|GELU|SiLU|Dropout|Identity|Flatten|Softmax|Sigmoid|Tanh|Upsample|Softplus|Hardswish|Mish|PixelShuffle|Loss$"
)
DYNAMIC = {"children", "named_children", "modules", "named_modules", "_modules", "__dict__"}


class UnusedParameters(Rule):
    code = "DDP310"
    name = "unused-parameters"
    message = "submodule never used in forward: DDP waits for its gradients and fails on the next iteration"
    fix = NONE
    docs = """
## What
A submodule the model's class creates in `__init__` (`self.aux_head = nn.Linear(...)`) that
`forward` (and the methods it calls) never uses, or uses only under a condition on the input, in a
model trained through DDP without `find_unused_parameters=True`. Also the reverse: the flag set on
a model where every submodule takes part in forward.

## Why
DDP's reducer expects a gradient for every parameter in every backward. Parameters that did not
contribute to the loss never report, and the next iteration stops with `RuntimeError: Expected to
have finished reduction in the prior iteration before starting a new one. This error indicates that
your module has parameters that were not used in producing loss. You can enable unused parameter
detection by passing the keyword argument find_unused_parameters=True ...`. A plain run never
complains. Conversely, `find_unused_parameters=True` costs an extra traversal of the autograd graph
every iteration (PyTorch warns: "find_unused_parameters=True was specified in DDP constructor, but
did not find any unused parameters").

## Example
```python
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.aux_head = nn.Linear(8, 2)  # left over from an experiment

    def forward(self, x):
        return self.body(x)
```
Remove the unused submodule, freeze it (`requires_grad_(False)`), or wrap with
`DDP(model, find_unused_parameters=True)` when the unused set really changes from step to step.

## Fix safety
No automatic fix: whether the module is dead code or used on other steps is the author's call, and
the analysis is static (a forward output that never reaches the loss is not seen). Classes that
reach their submodules dynamically (`self.children()`, `getattr`, `self._modules`) are skipped.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        seen: set[int] = set()
        wraps: list[tuple[str, cst.CSTNode, cst.Call | None]] = [
            (m.handle, m.definition.stmt, facts.models.wrapped(m)) for m in facts.models.trained
        ]
        for call in facts.models.ddp_calls:
            arg = call.args[0].value if call.args else None
            while isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
                arg = arg.func.value  # model.to(device)
            name = dotted(arg) if arg is not None else None
            if name is not None and not any(w[2] is call for w in wraps):
                wraps.append((name, call, call))
        for handle, at, wrap in wraps:
            cls = facts.models.model_class(handle, at)
            if cls is None or id(cls) in seen:
                continue
            seen.add(id(cls))
            flag = kwarg(wrap, "find_unused_parameters") if wrap is not None else None
            if flag is not None and not is_literal(flag.value, False) and not is_literal(flag.value, True):
                continue  # decided at run time
            verdict = _unused(facts, cls)
            if verdict is None:
                continue
            if flag is not None and is_literal(flag.value, True):
                if not verdict:
                    ctx.report(
                        flag,
                        "find_unused_parameters=True, but every submodule takes part in forward: it costs an extra autograd "
                        "traversal per iteration; drop it unless the runtime reports unused parameters",
                    )
                continue
            for attr, stmt, why in verdict:
                ctx.report(
                    stmt,
                    f"self.{attr} {why}: DDP waits for its gradients ('Expected to have finished reduction in the prior "
                    "iteration'); remove or freeze it, or pass find_unused_parameters=True",
                )


def _unused(facts, cls: cst.ClassDef) -> list[tuple[str, cst.CSTNode, str]] | None:
    """Submodules of `cls` that forward does not use (or only under a condition on its inputs); None when
    the class cannot be analysed."""
    methods = facts.index.methods_of(cls)
    init, forward = methods.get("__init__"), methods.get("forward")
    if init is None or forward is None:
        return None
    subs: dict[str, cst.CSTNode] = {}
    for node in walk(init):
        if not isinstance(node, cst.SimpleStatementLine):
            continue
        small = node.body[0] if len(node.body) == 1 else None
        if not isinstance(small, cst.Assign) or len(small.targets) != 1:
            continue
        target = small.targets[0].target
        if (
            isinstance(target, cst.Attribute)
            and dotted(target.value) == "self"
            and _is_module(facts, assigned_value(node))
        ):
            subs[target.attr.value] = small
    if not subs:
        return None
    reach = [forward]
    todo = [forward]
    while todo:
        m = todo.pop()
        for n in walk(m):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and dotted(n.func.value) == "self":
                callee = methods.get(n.func.attr.value)
                if callee is not None and callee not in reach:
                    reach.append(callee)
                    todo.append(callee)
    params = {p.name.value for p in forward.params.params} - {"self"}
    used: dict[str, bool] = {}  # attr -> used unconditionally somewhere
    for m in reach:
        for n in walk(m):
            if isinstance(n, cst.Name) and n.value in ("getattr", "vars"):
                return None
            if isinstance(n, cst.Attribute) and dotted(n.value) == "self":
                if n.attr.value in DYNAMIC:
                    return None
                if n.attr.value in subs:
                    used[n.attr.value] = used.get(n.attr.value, False) or not _input_conditional(facts, n, m, params)
            if isinstance(n, cst.For) and dotted(n.iter) == "self":
                return None
    frozen = {
        a
        for a in subs
        for n in walk(facts.module)
        if isinstance(n, cst.Attribute)
        and n.attr.value == "requires_grad_"
        and dotted(n.value)
        and (dotted(n.value) or "").endswith(f".{a}")
    }
    out = []
    for attr, stmt in subs.items():
        if attr in frozen:
            continue
        if attr not in used:
            out.append((attr, stmt, "is never used in forward"))
        elif not used[attr]:
            out.append((attr, stmt, "is used in forward only under a condition on the input"))
    return out


def _is_module(facts, value: cst.BaseExpression | None) -> bool:
    if not isinstance(value, cst.Call):
        return False
    q = facts.names.call_qual(value) or ""
    last = q.split(".")[-1]
    if q.startswith("torch.nn.") and last[:1].isupper() and not PARAMETERLESS.search(last):
        return True
    return isinstance(value.func, cst.Name) and any(c.name.value == value.func.value for c in facts.index.classes)


def _input_conditional(facts, node: cst.CSTNode, method: cst.FunctionDef, params: set[str]) -> bool:
    """Under an `if` (or conditional expression) whose test reads one of forward's inputs."""
    for anc in facts.index.ancestors(node):
        if anc is method:
            return False
        if isinstance(anc, (cst.If, cst.IfExp)) and not any(node is x for x in walk(anc.test)):
            if any(isinstance(n, cst.Name) and n.value in params for n in walk(anc.test)):
                return True
    return False


EXAMPLES = (
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 1)
                self.aux_head = nn.Linear(4, 2)

            def forward(self, x):
                return self.body(x)


        dist.init_process_group("gloo")
        model = DDP(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "self.aux_head is never used in forward: DDP waits for its gradients ('Expected to have finished "
            "reduction in the prior iteration'); remove or freeze it, or pass find_unused_parameters=True"
        ),
        note=(
            '`aux_head` never takes part in forward: the second iteration stops with "Expected to have '
            'finished reduction":'
        ),
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 8)
                self.head = nn.Linear(8, 1)

            def forward(self, x):
                return self.head(self.body(x).relu())


        dist.init_process_group("gloo")
        model = DDP(Net(), find_unused_parameters=True)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        message=(
            "find_unused_parameters=True, but every submodule takes part in forward: it costs an extra "
            "autograd traversal per iteration; drop it unless the runtime reports unused parameters"
        ),
        note="The reverse: the flag on a model whose every layer runs, at the cost of a graph traversal per step:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(4, 1)
                self.aux_head = nn.Linear(4, 2)
                self.aux_head.requires_grad_(False)

            def forward(self, x):
                return self.body(x)


        dist.init_process_group("gloo")
        model = DDP(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A frozen submodule has no gradients for DDP to wait for:",
    ),
)
