"""DDP006: init_process_group without torch.cuda.set_device(LOCAL_RANK) before it."""

from __future__ import annotations

import re

import libcst as cst

from ..edits import torch_name
from ..examples import clean, fixes, reports
from ..rule import Context, Order, Rule
from ..syntax import assign_targets, assigned_value, calls_in, code_of, dotted, positional


class SetDeviceMissingOrLate(Rule):
    code = "DDP006"
    name = "set-device-missing-or-late"
    message = "no torch.cuda.set_device(LOCAL_RANK) before init_process_group: every rank starts on GPU 0"
    requires = ()
    docs = """
## What
`init_process_group()` with no `torch.cuda.set_device(local_rank)` before it (or with it after).

## Why
Each process otherwise creates its CUDA context on GPU 0 (about 0.7 GB extra per rank there), and
NCCL can fail with `ncclInvalidUsage ... Duplicate GPU detected : rank 1 and rank 0 both on CUDA device`.
A barrier may also pick the wrong GPU and hang.

## Example
```python
dist.init_process_group("nccl")
```
becomes
```python
if torch.cuda.is_available():
    torch.cuda.set_device(LOCAL_RANK)
dist.init_process_group("nccl")
```

## Fix safety
Safe: a `set_device` placed before init moves nothing but the current device of each rank; a late
`set_device` in the same block is moved up.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        for init in facts.launch.init_calls:
            init_stmt = facts.index.site(init).stmt
            late = [c for c in facts.launch.set_device_calls if facts.index.before(init, c)]
            early = [c for c in facts.launch.set_device_calls if facts.index.before(c, init)]
            if early:
                continue
            if late:
                late_msg = "torch.cuda.set_device() runs after init_process_group: move it before"
                pair = _siblings(facts, late[0], init)
                if pair is None:
                    ctx.report(late[0], late_msg, fix="none")
                elif ctx.report(late[0], late_msg):
                    ctx.plan.move_before(pair[0], pair[1], order=Order.SET_DEVICE)
                continue
            spawned = _is_spawn_target(facts, init)
            local = _local_rank_in_scope(ctx, init, module_level=not spawned)  # mp.spawn sets no LOCAL_RANK
            if local is None and spawned:
                ctx.report(init, self.message + " (pass the process index of mp.spawn to set_device)", fix="none")
                continue
            if not ctx.report(init):
                continue
            local = local or ctx.env("LOCAL_RANK")
            torch = torch_name(ctx)
            stmts = ctx.plan.statements(
                """
                if {torch}.cuda.is_available():
                    {torch}.cuda.set_device({L})
                """,
                torch=torch,
                L=local,
            )
            ctx.plan.insert_before(init_stmt, stmts, order=Order.SET_DEVICE)


def _siblings(facts, set_device: cst.Call, init: cst.Call):
    """(statement holding set_device, statement holding init) in one block, when the first holds
    nothing but the set_device (an `if torch.cuda.is_available():` around it is fine)."""
    init_chain = [facts.index.site(init).stmt] + [
        a for a in facts.index.ancestors(init) if isinstance(a, cst.BaseStatement)
    ]
    for anc in [facts.index.site(set_device).stmt] + [
        a for a in facts.index.ancestors(set_device) if isinstance(a, cst.BaseStatement)
    ]:
        block = facts.index.parent.get(anc)
        for other in init_chain:
            if facts.index.parent.get(other) is block and block is not None:
                if (
                    sum(
                        1
                        for c in calls_in(anc)
                        if c is not set_device and facts.names.call_qual(c) != "torch.cuda.is_available"
                    )
                    == 0
                    and other is not anc
                ):
                    return anc, other
                return None
    return None


def _is_spawn_target(facts, node: cst.CSTNode) -> bool:
    func = facts.index.enclosing(node, cst.FunctionDef)
    if not isinstance(func, cst.FunctionDef):
        return False
    return any(
        positional(c, 0) is not None and dotted(positional(c, 0).value) == func.name.value
        for c in facts.launch.spawn_calls
    )


def _local_rank_in_scope(ctx: Context, node: cst.CSTNode, *, module_level: bool = True) -> str | None:
    """A variable of the init call's function that holds LOCAL_RANK (`local_rank = int(os.environ[...])`),
    or with `module_level`, one of the module's."""
    facts = ctx.facts
    scope = facts.index.scope_of(node)
    for stmt in facts.names.assignments(scope, "local_rank") + facts.names.assignments(scope, "args.local_rank"):
        if facts.index.before(stmt.stmt, node):
            return assign_targets(stmt.stmt)[0]
    func = facts.index.enclosing(node, cst.FunctionDef)
    if isinstance(func, cst.FunctionDef):
        for p in func.params.params:
            if re.fullmatch(r"(local_rank|gpu|gpu_id|device_id)", p.name.value):
                return p.name.value
    for s in facts.module.body if module_level else ():
        value = assigned_value(s)
        if value is not None and "LOCAL_RANK" in code_of(value) and len(assign_targets(s)) == 1:
            return assign_targets(s)[0]
    return None


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            dist.init_process_group("nccl")
            model = DDP(nn.Linear(4, 1).cuda())
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        RANK = int(os.environ.get("RANK", 0))
        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))
        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1


        def main():
            if torch.cuda.is_available():
                torch.cuda.set_device(LOCAL_RANK)
            dist.init_process_group("nccl")
            model = DDP(nn.Linear(4, 1).cuda())
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            main()
        """,
        note="Each process picks its GPU before it joins:",
    ),
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("nccl")
        torch.cuda.set_device(local_rank)
        model = DDP(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
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

        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A `set_device` after the join moves up:",
    ),
    reports(
        """
        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def worker(rank, world_size):
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=world_size)
            model = DDP(nn.Linear(4, 1).cuda())
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


        if __name__ == "__main__":
            mp.spawn(worker, args=(2,), nprocs=2)
        """,
        message=(
            "no torch.cuda.set_device(LOCAL_RANK) before init_process_group: every rank starts on GPU 0 (pass "
            "the process index of mp.spawn to set_device)"
        ),
        note=(
            "Reported without a fix: `mp.spawn` sets no LOCAL_RANK, and only the script knows which GPU a "
            "process index means:"
        ),
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
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="`set_device` before the join:",
    ),
)
