"""DDP310: submodules whose parameters never take part in forward (static hint)."""

from __future__ import annotations

import libcst as cst

from ..analysis.unused import sitting_out
from ..diagnostic import NONE
from ..examples import clean, reports
from ..rule import Context, Rule
from ..syntax import dotted, is_literal, kwarg


class UnusedParameters(Rule):
    code = "DDP310"
    name = "unused-parameters"
    message = "submodule never used in forward: DDP waits for its gradients and fails on the next iteration"
    fix = NONE
    docs = """
## What
A submodule the model's class creates in `__init__` (`self.aux_head = nn.Linear(...)`) that
`forward` (and the methods it calls) never uses, uses only under a condition on the input, or only
when the model is built with some option (`if self.do_bn:`, `self.do_bn` set from an `__init__`
argument), in a model trained through DDP without `find_unused_parameters=True` (also each model of
a list trained side by side). Also the reverse: the flag set on
a model where every submodule takes part in forward. A container forward never calls whose only
parameters belong to submodules it does use (`self.block = nn.Sequential(self.fc1, nn.ReLU())`) has
no gradient of its own to wait for and is not reported.

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
No automatic fix here: whether the module is dead code or used on other steps is the author's call
(a wrap DDP301 adds passes `find_unused_parameters=True` for a submodule used only on some inputs or
with some option, whose use is known only at run time), and
the analysis is static (a forward output that never reaches the loss is not seen). Classes that
reach their submodules dynamically (`self.children()`, `getattr`, `self._modules`) are skipped.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        seen: set[int] = set()
        wraps: list[tuple[str, cst.CSTNode, cst.Call | None]] = [
            (m.handle, m.definition.stmt, facts.models.wrapped(m)) for m in facts.models.trained if m.each is None
        ]
        for call in facts.models.ddp_calls:
            arg = call.args[0].value if call.args else None
            while isinstance(arg, cst.Call) and isinstance(arg.func, cst.Attribute):
                arg = arg.func.value  # model.to(device)
            name = dotted(arg) if arg is not None else None
            if name is not None and not any(w[2] is call for w in wraps):
                wraps.append((name, call, call))
        classes = [(facts.models.model_class(handle, at), wrap) for handle, at, wrap in wraps]
        classes += [
            (c, facts.models.wrapped(m)) for m in facts.models.trained if m.each for c in facts.models.classes_of(m)
        ]
        for cls, wrap in classes:
            if cls is None or id(cls) in seen:
                continue
            seen.add(id(cls))
            flag = kwarg(wrap, "find_unused_parameters") if wrap is not None else None
            if flag is not None and not is_literal(flag.value, False) and not is_literal(flag.value, True):
                continue  # decided at run time
            verdict = sitting_out(facts.index, facts.names, cls)
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
            for attr, stmt, why, _ in verdict:
                ctx.report(
                    stmt,
                    f"self.{attr} {why}: DDP waits for its gradients ('Expected to have finished reduction in the prior "
                    "iteration'); remove or freeze it, or pass find_unused_parameters=True",
                )


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
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 8)
                self.block = nn.Sequential(self.fc1, nn.ReLU(), nn.Dropout(0.3))
                self.fc2 = nn.Linear(8, 1)

            def forward(self, x):
                return self.fc2(torch.relu(self.fc1(x)))


        dist.init_process_group("gloo")
        model = DDP(Net())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note=(
            "A container forward never calls, whose only parameters belong to a submodule forward uses "
            "(`fc1`): it has no gradient of its own to wait for:"
        ),
    ),
)
