"""DDP006: init_process_group without torch.cuda.set_device(LOCAL_RANK) before it."""
from __future__ import annotations

import re

import libcst as cst

from ..edits import torch_name
from ..rule import Context, Rule
from ..syntax import assign_targets, assigned_value, code_of


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
        for init in facts.init_calls:
            init_stmt = facts.site(init).stmt
            late = [c for c in facts.set_device_calls if facts.before(init, c)]
            early = [c for c in facts.set_device_calls if facts.before(c, init)]
            if early:
                continue
            if late:
                sd_site = facts.site(late[0])
                if sd_site.block is facts.site(init).block:
                    if ctx.report(late[0], "torch.cuda.set_device() runs after init_process_group: move it before"):
                        ctx.plan.moved.add(sd_site.stmt)
                        ctx.plan._insert(ctx.plan.before, init_stmt, 30, moved=sd_site.stmt)
                else:
                    ctx.report(late[0], "torch.cuda.set_device() runs after init_process_group: move it before", fix="none")
                continue
            if not ctx.report(init):
                continue
            local = _local_rank_in_scope(ctx, init) or ctx.env("LOCAL_RANK")
            torch = torch_name(ctx)
            stmts = ctx.plan.statements(
                """
                if {torch}.cuda.is_available():
                    {torch}.cuda.set_device({L})
                """,
                torch=torch,
                L=local,
            )
            ctx.plan.insert_before(init_stmt, stmts, order=30)


def _local_rank_in_scope(ctx: Context, node: cst.CSTNode) -> str | None:
    """A variable of the init call's function that holds LOCAL_RANK (`local_rank = int(os.environ[...])`)."""
    facts = ctx.facts
    scope = facts.scope_of(node)
    for stmt in facts.assignments(scope, "local_rank") + facts.assignments(scope, "args.local_rank"):
        if facts.before(stmt.stmt, node):
            return assign_targets(stmt.stmt)[0]
    func = facts.enclosing(node, cst.FunctionDef)
    if isinstance(func, cst.FunctionDef):
        for p in func.params.params:
            if re.fullmatch(r"(local_rank|gpu|gpu_id|device_id)", p.name.value):
                return p.name.value
    for s in facts.module.body:
        value = assigned_value(s)
        if value is not None and "LOCAL_RANK" in code_of(value) and len(assign_targets(s)) == 1:
            return assign_targets(s)[0]
    return None
