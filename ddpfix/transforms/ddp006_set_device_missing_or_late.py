"""DDP006: init_process_group without torch.cuda.set_device(LOCAL_RANK) before it."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.flow import binds, conflicts, reads
from ..analysis.imports import Origin
from ..analysis.summaries import SET_DEVICE
from ..analysis.torch_api import READ_ONLY_CALLS
from ..edits import torch_name
from ..examples import clean, fixes, reports
from ..rule import NONE, Context, Order, Rule
from ..syntax import (
    assign_targets,
    assigned_value,
    calls_in,
    code_of,
    dotted,
    kwarg,
    method_name,
    positional,
    walk,
)


class SetDeviceMissingOrLate(Rule):
    code = "DDP006"
    name = "set-device-missing-or-late"
    message = "no torch.cuda.set_device(LOCAL_RANK) before init_process_group: every rank starts on GPU 0"
    requires = ()
    docs = """
## What
`init_process_group()` with no `torch.cuda.set_device(local_rank)` before it, also where the script
joins through a helper of its own modules (`utils.setup()`) that does not set the device itself;
or with `set_device` only after it, when something between the two runs on a GPU or talks to the
other ranks: a collective (`dist.barrier()`, also in a helper of this file), a DDP wrap (it
broadcasts the parameters), a `torch.cuda` call, `.cuda()`, `.to(device)`, or a tensor made with
`device=`. A `set_device` right after the join, with nothing of that kind before it, is not
reported: nothing has used a GPU yet, so the order is harmless; neither is one whose order to the
join cannot be told (another branch, a function the joining code does not reach). A `set_device`
late for two init calls (a gloo branch and an NCCL branch) is one finding.

## Why
Work that runs before `set_device` runs on GPU 0 in every process: each creates a CUDA context
there (about 0.7 GB extra per rank), NCCL can fail with `ncclInvalidUsage ... Duplicate GPU
detected : rank 1 and rank 0 both on CUDA device`, and a barrier may pick the wrong GPU and hang.

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
The device is the script's own local rank where it has one (`local_rank`, `args.local_rank` of a
`--local_rank` option, a `local_rank`/`gpu` parameter of an mp.spawn or `Process(target=...)` target),
else LOCAL_RANK; a process the script starts itself has no LOCAL_RANK, so there, with no such
parameter, the finding names the process index to pass and makes no edit. A late `set_device`
moves up together with the assignments it reads:
```python
dist.init_process_group("gloo")
dist.barrier()
device = torch.device(f"cuda:{local_rank}")
torch.cuda.set_device(device)
```
becomes
```python
device = torch.device(f"cuda:{local_rank}")
torch.cuda.set_device(device)
dist.init_process_group("gloo")
dist.barrier()
```

## Fix safety
Safe: a `set_device` placed before init moves nothing but the current device of each rank. Data
decides where it may go: an assignment moves along only when it reads the environment or the
hardware (`int(os.environ[...])`, `torch.device(...)`) and no line it passes reads or sets what it
sets. A `set_device` that reads something computed from the process group (`dist.get_rank() %
n`), or sits in another block than the init call, or a device variable set only after init, is
reported without a fix.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        reported: set[int] = set()  # a set_device late for two init calls (if/else backends) is one finding
        if _never_on_cuda(facts):
            return  # a CPU script (gloo, no CUDA anywhere): there is no device to set
        for init, helper in _joins(facts):
            if helper is not None and facts.modules.call_does(init, SET_DEVICE):
                continue  # the helper sets the device itself
            if any(facts.index.before(c, init) for c in _device_setters(facts)):
                continue
            joins = "init_process_group" if helper is None else f"{dotted(init.func)}() (it joins the process group)"
            late = [c for c in facts.launch.set_device_calls if facts.index.before(init, c)]
            if late:
                path = facts.device_path
                spans = [(c, between) for c in late if (between := path.between(init, c)) is not None]
                work = path.device_work(spans[0][1]) if spans else None
                if work is None or id(spans[0][0]) in reported:
                    continue  # nothing runs on a GPU or talks to the other ranks before the device is set
                setter = spans[0][0]
                reported.add(id(setter))
                call, what = work
                line = facts.index.position(call).start.line
                late_msg = (
                    f"torch.cuda.set_device() runs after {joins}, and `{what}` (line {line}) runs before it "
                    "on the wrong GPU: move it before"
                )
                moves, why = _hoist(facts, setter, init)
                if moves is None:
                    ctx.report(setter, f"{late_msg} ({why})", fix=NONE)
                elif ctx.report(setter, late_msg):
                    anchor = facts.index.site(init).stmt
                    for stmt in moves:
                        ctx.plan.move_before(stmt, _in_block(facts, anchor, stmt), order=Order.SET_DEVICE)
                continue
            message = self.message if helper is None else f"no torch.cuda.set_device(LOCAL_RANK) before {joins}"
            spawned = _is_spawn_target(facts, init)
            local = _local_rank_in_scope(ctx, init, module_level=not spawned)  # a started process has no LOCAL_RANK
            if local is None and spawned:
                starter = "mp.spawn" if facts.launch.spawn_calls else "the script's own Process"
                ctx.report(init, f"{message} (pass the process index of {starter} to set_device)", fix=NONE)
                continue
            init_stmt = facts.index.site(init).stmt
            if local is not None and not _bound_before(facts, local, init_stmt):
                ctx.report(init, f"{message} (`{local}` is set only after it: set the device by hand)", fix=NONE)
                continue
            if local is not None and helper is None:
                message = message.replace("set_device(LOCAL_RANK)", f"set_device({local})")
            if not ctx.report(init, message):
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


def _joins(facts):
    """(call, helper) for every place the script joins its process group: its own
    init_process_group calls (helper None), and calls of its own modules' helpers that do."""
    out = [(c, None) for c in facts.launch.init_calls]
    out += [(c, dotted(c.func)) for c in facts.launch.helper_joins]
    return sorted(out, key=lambda p: facts.index.order(p[0]))


def _device_setters(facts):
    """torch.cuda.set_device calls, and calls of the script's own helpers that set the device."""
    yield from facts.launch.set_device_calls
    for call in facts.index.calls:
        if facts.launch.helper_does(call, SET_DEVICE):
            yield call


def _hoist(facts, set_device: cst.Call, init: cst.Call):
    """The statements to move before the init statement so set_device runs first: the one holding
    set_device, and before it the assignments of the names it reads that sit between the two (when
    they only read the environment or the hardware). (None, why) when that cannot be done."""
    pair = _siblings(facts, set_device, init)
    if pair is None:
        return None, "it is not in the same block as the init call: move it by hand"
    holder, init_stmt = pair
    body = list(facts.index.parent[holder].body)  # type: ignore[attr-defined]
    lo, hi = body.index(init_stmt), body.index(holder)
    need = reads(holder)
    movers: list[cst.BaseStatement] = []
    for j in range(hi - 1, lo - 1, -1):
        stmt = body[j]
        bound = binds(stmt)
        if not conflicts(bound, need):
            continue
        name = next(b for b in sorted(bound) if conflicts([b], need))
        line = facts.index.position(stmt).start.line
        if j == lo or not _pure(facts, stmt):
            return None, f"it reads `{name}`, set at line {line} after the process group exists"
        movers.insert(0, stmt)
        need |= reads(stmt)
    moved = set().union(*(binds(m) for m in movers)) if movers else set()
    for j in range(lo, hi):
        stmt = body[j]
        if stmt not in movers and (conflicts(moved, reads(stmt)) or conflicts(moved, binds(stmt))):
            line = facts.index.position(stmt).start.line
            return None, f"moving what it reads up would change line {line}"
    return [*movers, holder], None


def _pure(facts, stmt: cst.CSTNode) -> bool:
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for call in calls_in(stmt):
        q = facts.names.call_qual(call) or ""
        if q not in READ_ONLY_CALLS and not (
            method_name(call) == "format" and isinstance(call.func.value, cst.SimpleString)
        ):  # type: ignore[attr-defined]
            return False
    return True


def _in_block(facts, anchor: cst.CSTNode, stmt: cst.CSTNode) -> cst.CSTNode:
    """The statement of `stmt`'s block that holds `anchor` (what a move goes before)."""
    block = facts.index.parent[stmt]
    for node in (anchor, *facts.index.ancestors(anchor)):
        if facts.index.parent.get(node) is block:
            return node
    return anchor


def _bound_before(facts, name: str, stmt: cst.CSTNode) -> bool:
    """Is `name` (a variable ddpfix did not introduce) bound before `stmt` runs: a parameter of its
    function, an assignment before it in that function, or a module-level binding before the point
    where module-level execution reaches it?"""
    if name not in facts.index.identifiers:
        return True  # ddpfix's own constant: placed before whatever reads it
    head = name.split(".")[0]
    func = facts.index.enclosing(stmt, cst.FunctionDef)
    if isinstance(func, cst.FunctionDef):
        if any(p.name.value == head for p in _all_params(func)):
            return True
        if any(facts.index.before(s.stmt, stmt) for s in facts.names.assignments(func, name)):
            return True
        if facts.names.assignments(func, name) or facts.names.assignments(func, head):
            return False  # a local of the function, set only later
    first = facts.flow.first_binding([name, head])
    return first is not None and first < facts.flow.runs_at(stmt)


def _all_params(func: cst.FunctionDef):
    p = func.params
    yield from (*p.posonly_params, *p.params, *p.kwonly_params)


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
    started = [positional(c, 0) or kwarg(c, "fn") for c in facts.launch.spawn_calls]
    started += [kwarg(c, "target") for c in facts.launch.process_starts]
    return any(arg is not None and dotted(arg.value) == func.name.value for arg in started)


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
    if "local_rank" in facts.launch.options.by_dest:  # the script's own --local_rank, read where it joins
        for test in facts.launch.tests_around(node):
            for name in reads(test):
                if name.endswith(".local_rank"):
                    return name
    for s in facts.module.body if module_level else ():
        value = assigned_value(s)
        if value is not None and "LOCAL_RANK" in code_of(value) and len(assign_targets(s)) == 1:
            return assign_targets(s)[0]
    return None


CUDA_WORDS = re.compile(r"cuda|nccl", re.IGNORECASE)
DEVICE_INDEX = re.compile(r"rank|gpu|local|device", re.IGNORECASE)


def _never_on_cuda(facts) -> bool:
    """Does nothing in the script touch a GPU: no `cuda` name or attribute, no "cuda"/"nccl" string, no
    `.to(rank)`-style move to a device index, no `device_ids`, and no module of its own that could?"""
    table = facts.modules.table
    if any(table.resolve(name)[0] is not Origin.LIBRARY for name in table.imported):
        return False
    index = facts.index
    if any(CUDA_WORDS.search(s.value) for s in index.strings):
        return False
    chosen = []  # `device_ids=[...] if next(model.parameters()).is_cuda else None`: a GPU only if the model is on one
    for call in index.calls:
        for a in call.args:
            if a.keyword is not None and a.keyword.value in ("device_ids", "output_device"):
                if not _only_for_a_cuda_model(a.value):
                    return False
                chosen.append(a.value)
        if method_name(call) == "to" and call.args:
            first = call.args[0].value
            if isinstance(first, cst.Integer) or (isinstance(first, cst.Name) and DEVICE_INDEX.search(first.value)):
                return False
    if "cuda" in index.identifiers:
        cuda = (n for n in walk(facts.module) if type(n) is cst.Name and n.value == "cuda")
        return all(any(index.contains(c, n) for c in chosen) for n in cuda)
    return True


def _only_for_a_cuda_model(value: cst.BaseExpression) -> bool:
    """`[...] if X.is_cuda else None`: devices named only when the model is on a GPU already."""
    return (
        type(value) is cst.IfExp
        and type(value.test) is cst.Attribute
        and value.test.attr.value == "is_cuda"
        and type(value.orelse) is cst.Name
        and value.orelse.value == "None"
    )


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


        LOCAL_RANK = int(os.environ.get("LOCAL_RANK", 0))


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
        dist.barrier()
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
        dist.barrier()
        model = DDP(nn.Linear(4, 1).cuda())
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        """,
        note="A `set_device` after the join and after a collective moves up:",
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
    clean(
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
        note="`set_device` right after the join, before any GPU work or collective: the order is harmless:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def main():
            dist.init_process_group("gloo")
            model = DDP(nn.Linear(4, 1))
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            dist.destroy_process_group()


        if __name__ == "__main__":
            main()
        """,
        note="A CPU script (gloo, nothing on a GPU): there is no device to set:",
    ),
)
