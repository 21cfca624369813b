"""DDP005: the global RANK used as a device, or LOCAL_RANK used to pick the one writer / the shard."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.rank_kinds import GLOBAL, judged_at_callers, rank_kind, spawns
from ..analysis.ranks import Ranks
from ..analysis.summaries import GLOBAL_RANK_DEVICE
from ..edits import without_kwarg
from ..examples import clean, fixes
from ..rule import NONE, Context, Rule
from ..syntax import assigned_value, calls_in, code_of, dotted, kwarg, mentions, method_name, positional, walk

DEVICE_EXPRS = (cst.Name, cst.Attribute, cst.Call)
DEVICE_HELPER = re.compile(r"device|gpu|cuda", re.IGNORECASE)

SIDE_EFFECTS = ("torch.save", "print", "logging.", "SummaryWriter", "wandb.")


class LocalVsGlobalRank(Rule):
    code = "DDP005"
    name = "local-vs-global-rank"
    message = "local and global rank mixed up: devices follow LOCAL_RANK, writers and shards follow RANK"
    docs = """
## What
The global rank used as a CUDA device (`torch.cuda.set_device(rank)`, `.to(rank)`,
`torch.device(f"cuda:{dist.get_rank()}")`, `device_ids=[rank]`, `output_device=rank`, also inside a
helper such as `get_device()`, or passed to a helper's device parameter), or the local rank used
where the global one is meant: the single writer (`if local_rank == 0: torch.save(...)`, or
`if gpu == 0: print(...)` in an mp.spawn target on several nodes that joins with
`rank = args.nr * args.gpus + gpu`), the
sampler's shard (`DistributedSampler(ds, rank=local_rank)`), or the rank of `init_process_group`
in an `mp.spawn` target that uses the process index (`rank = gpu`) in a world spanning several
nodes. A helper of the script's own modules that picks the GPU by the global rank is reported
where the script calls it.

A rank is judged by what it is bound to, not by its name: `rank = dist.get_rank()` or
`int(os.environ["RANK"])` is the global rank; `rank = int(os.environ["LOCAL_RANK"])`, `dist.get_rank()
% torch.cuda.device_count()` and an mp.spawn target's process index are local. A parameter takes what
its callers pass (`main(rank, ...)` is judged at the call, once, however often `main` uses it), and a
name bound several ways (LOCAL_RANK when set, else RANK) is not reported as a GPU pick: only a rank
that is global on every binding is. Each use is one finding.

## Why
On one node RANK == LOCAL_RANK, so this only breaks multi-node: `set_device(rank)` gives
`CUDA error: invalid device ordinal` on the second node; `local_rank == 0` elects one writer per
node, which clobber each other on a shared filesystem; a sampler keyed on the local rank makes every
node train the same shard; and spawned processes numbered 0..N-1 on every node join with duplicate
ranks, so `init_process_group` waits until it times out.

## Example
```python
torch.cuda.set_device(rank)
...
if local_rank == 0:
    torch.save(model.module.state_dict(), "ckpt.pt")
```
becomes
```python
torch.cuda.set_device(local_rank)
...
if RANK == 0:
    torch.save(model.module.state_dict(), "ckpt.pt")
```
and in an mp.spawn target whose options name the node's rank (`--nr`, `--node_rank`)
```python
def train(gpu, args):
    rank = gpu
```
becomes
```python
def train(gpu, args):
    rank = args.nr * args.gpus + gpu
```
(`args.gpus` being what `mp.spawn(..., nprocs=args.gpus)` starts per node).

## Fix safety
Safe for names recognised as ranks (environment variables, `dist.get_rank()`, argparse
`--local_rank`); the sampler's `rank=`/`num_replicas=` are dropped so the process group decides. In
a script that spawns its processes the local rank is the spawn target's process index; elsewhere
there the finding has no fix. Multi-node spawn ranks are fixed only where the node rank and the
processes per node are both named in the script; a helper in another file is reported, not changed.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        seen: set[int] = set()
        for expr in _with_callers(facts, _device_uses(facts)):
            if id(expr) in seen or judged_at_callers(facts, expr):
                continue  # one finding per use; a helper's parameter is judged where callers choose it
            seen.add(id(expr))
            if rank_kind(facts, expr) == GLOBAL:
                message = (
                    f"the global rank `{code_of(expr)}` picks the GPU: use the local rank "
                    "(device ordinals restart on every node)"
                )
                local = _local_name(ctx, expr)
                if local is None:
                    ctx.report(expr, message + "; mp.spawn's process index is the local rank: pass it here", fix=NONE)
                elif ctx.report(expr, message):
                    ctx.plan.replace(expr, lambda n, local=local: cst.parse_expression(local))
        for call in facts.index.calls:
            if not DEVICE_HELPER.search(dotted(call.func) or ""):
                continue  # only helpers named for devices are read (reading a module costs)
            for found in facts.modules.findings(call, GLOBAL_RANK_DEVICE):
                ctx.report(
                    call,
                    f"{dotted(call.func)}() picks the GPU by the global rank (`{found.detail}`, "
                    f"{found.path.name}:{found.line}): use the local rank there (device ordinals restart on every node)",
                    fix=NONE,
                )
        spawned_ranks(ctx)
        spawn_index = _spawn_local_indices(facts)
        for node in facts.index.ifs:
            if not _has_side_effect(facts, node.body):
                continue
            index, joined = spawn_index.get(facts.index.enclosing(node, cst.FunctionDef), (None, None))
            for comp in _local_rank_zero_tests(ranks, node.test, index):
                if ctx.report(comp, "the local rank elects the writer: one per node; use the global rank"):
                    cond = cst.parse_expression(f"{joined} == 0" if joined is not None else ctx.rank0(node))
                    if comp is not node.test and not comp.lpar and type(cond) is not cst.Comparison:
                        cond = cond.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])  # `... and (...)`
                    elif comp.lpar:
                        cond = cond.with_changes(lpar=comp.lpar, rpar=comp.rpar)
                    ctx.plan.replace(comp, lambda n, c=cond: c)
        for call in facts.data.sampler_calls:
            arg = kwarg(call, "rank")
            if arg is not None and ranks.is_local_rank(arg.value):
                if ctx.report(arg, "DistributedSampler keyed on the local rank: every node trains the same shard"):
                    ctx.plan.replace(call, lambda n: without_kwarg(without_kwarg(n, "rank"), "num_replicas"))


def _device_uses(facts):
    """Expressions that name a CUDA device: set_device/.to/.cuda arguments, torch.device's index,
    the `{...}` of `f"cuda:{...}"`, device_ids and output_device."""
    for call in facts.index.calls:
        q = facts.names.call_qual(call) or ""
        if q == "torch.cuda.set_device" or method_name(call) in ("to", "cuda"):
            arg = positional(call, 0)
            if arg is not None and type(arg.value) in (cst.Name, cst.Attribute, cst.Call):
                yield arg.value
        if q == "torch.device" and len(call.args) == 2 and isinstance(call.args[1].value, DEVICE_EXPRS):
            yield call.args[1].value
    for node in walk(facts.module):
        if type(node) is not cst.FormattedString:
            continue
        head = node.parts[0] if node.parts else None
        if type(head) is cst.FormattedStringText and head.value.startswith("cuda:") and len(node.parts) == 2:
            part = node.parts[1]
            if type(part) is cst.FormattedStringExpression and isinstance(part.expression, DEVICE_EXPRS):
                yield part.expression
    for call in facts.index.calls:
        ids = kwarg(call, "device_ids")
        if ids is not None and type(ids.value) is cst.List and len(ids.value.elements) == 1:
            el = ids.value.elements[0].value
            if type(el) in (cst.Name, cst.Attribute):
                yield el
        out = kwarg(call, "output_device")
        if ids is not None and out is not None and type(out.value) in (cst.Name, cst.Attribute):
            yield out.value


def _with_callers(facts, exprs):
    """The device expressions, and where one is a parameter of a helper of this file (`def
    get_device(rank): return torch.device("cuda", rank)`), the arguments its callers pass for it."""
    for expr in exprs:
        yield expr
        func = facts.index.enclosing(expr, cst.FunctionDef)
        if not isinstance(expr, cst.Name) or not isinstance(func, cst.FunctionDef):
            continue
        params = [p.name.value for p in func.params.params]
        if expr.value not in params or facts.names.assignments(func, expr.value):
            continue
        pos = params.index(expr.value)
        if facts.index.enclosing(func, cst.ClassDef) is not None:
            pos -= 1  # self
        for call in facts.index.callers_of(func):
            arg = kwarg(call, expr.value) or (positional(call, pos) if pos >= 0 else None)
            if arg is not None and isinstance(arg.value, DEVICE_EXPRS):
                yield arg.value


def _local_name(ctx: Context, at: cst.CSTNode) -> str | None:
    """The local rank where `at` is: the script's `local_rank`, an mp.spawn target's process index,
    or LOCAL_RANK (None in a script that spawns its processes, where the environment has none)."""
    facts = ctx.facts
    for name in ("local_rank", "args.local_rank"):
        if facts.names.assignments(facts.index.scope_of(at), name):
            return name
    for name in sorted(facts.ranks.local_rank_names):  # the script's own, `ddp_local_rank = int(os.environ[...])`
        scopes = {facts.index.scope_of(at), facts.module}
        if "." not in name and any(facts.names.assignments(scope, name) for scope in scopes):
            return name
    func = facts.index.enclosing(at, cst.FunctionDef)
    if isinstance(func, cst.FunctionDef) and any(p.name.value == "local_rank" for p in func.params.params):
        return "local_rank"
    if facts.launch.spawn_calls:
        target = spawn_target_of(facts, at)
        return target.params.params[0].name.value if target is not None and target.params.params else None
    return ctx.env("LOCAL_RANK")


def spawn_target_of(facts, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The mp.spawn target function `node` is in (directly)."""
    func = facts.index.enclosing(node, cst.FunctionDef)
    targets = {t for t, _ in spawns(facts)}
    return func if func in targets else None


NODE_RANK = re.compile(r"^(node_rank|nr|node_id|node_idx|machine_rank|node)$", re.IGNORECASE)


def spawned_ranks(ctx: Context) -> None:
    """mp.spawn's process index used as the global rank of init_process_group: right on one node, but
    on a second node the ranks repeat (`rank = gpu` instead of `node_rank * gpus_per_node + gpu`)."""
    facts = ctx.facts
    for func, spawn in spawns(facts):
        index = func.params.params[0].name.value
        node = _node_rank(facts, func, spawn)
        if node is None and not _multi_node_world(facts, func):
            continue  # one node: the process index is the global rank
        for init in facts.launch.init_calls:
            if facts.index.enclosing(init, cst.FunctionDef) is not func:
                continue
            arg = kwarg(init, "rank")
            if arg is None:
                continue
            site = _index_only(facts, func, arg.value, index)
            if site is None:
                continue
            per_node = _in_target(facts, func, spawn)
            message = (
                f"mp.spawn's process index `{index}` is the global rank here: on a second node the ranks repeat "
                f"and init_process_group waits forever; the global rank is node rank * processes per node + {index}"
            )
            if node is None or per_node is None:
                ctx.report(site, message + " (name the node rank and pass it here)", fix=NONE)
            elif ctx.report(site, message):
                expr = cst.parse_expression(f"{node} * {per_node} + {index}")
                ctx.plan.replace(site, lambda n, e=expr: e)


def _node_rank(facts, func: cst.FunctionDef, spawn: cst.Call) -> str | None:
    """How `func` spells the node's rank: an option of the parsed arguments it receives
    (`args.node_rank`, `args.nr`) or a parameter (`node_rank`)."""
    params = [p.name.value for p in func.params.params]
    for p in params:
        if NODE_RANK.match(p):
            return p
    dests = facts.launch.options.by_dest
    namespace = next((p for p in params if any(mentions(func.body, f"{p}.{d}") for d in dests)), None)
    spawned = kwarg(spawn, "args")
    if namespace is None and spawned is not None and isinstance(spawned.value, cst.Tuple):
        for el, param in zip(spawned.value.elements, params[1:]):
            if isinstance(el.value, cst.Name) and _parsed_options(facts, spawn, el.value.value):
                namespace = param
    for dest in dests:
        if NODE_RANK.match(dest) and namespace is not None:
            return f"{namespace}.{dest}"  # the parsed options reach the target: it can read the node rank
    return None


def _parsed_options(facts, at: cst.CSTNode, name: str) -> bool:
    """Is `name` bound to `parser.parse_args()` where `at` is (or at module level)?"""
    for scope in (facts.index.scope_of(at), facts.module):
        for site in facts.names.assignments(scope, name):
            value = assigned_value(site.stmt)
            if isinstance(value, cst.Call) and method_name(value) in ("parse_args", "parse_known_args"):
                return True
    return False


def _multi_node_world(facts, func: cst.FunctionDef) -> bool:
    """Does the script size its world beyond one node (`world_size = gpus * nodes`)?"""
    for assign in facts.index.assigns:
        if isinstance(assign.value, cst.BinaryOperation) and isinstance(assign.value.operator, cst.Multiply):
            if any("world" in (dotted(t.target) or "").lower() for t in assign.targets):
                return True
    return False


def _index_only(facts, func: cst.FunctionDef, expr: cst.BaseExpression, index: str) -> cst.BaseExpression | None:
    """The expression to fix when `expr` (init's rank) is the process index itself or a name whose
    every assignment in `func` is the bare index (`rank = gpu`, `args.rank = gpu`)."""
    if isinstance(expr, cst.Name) and expr.value == index:
        return expr
    name = dotted(expr)
    if name is None:
        return None
    sites = facts.names.assignments(func, name)
    values = [assigned_value(s.stmt) for s in sites]
    if sites and all(isinstance(v, cst.Name) and v.value == index for v in values) and len(sites) == 1:
        return values[0]
    return None


def _in_target(facts, func: cst.FunctionDef, spawn: cst.Call) -> str | None:
    """The spawn's `nprocs` in the target's own terms: the parameter it is passed as, or an
    attribute of one (`args.gpus` when `args` is passed)."""
    nprocs = kwarg(spawn, "nprocs")
    spawned = kwarg(spawn, "args")
    if nprocs is None or spawned is None or not isinstance(spawned.value, cst.Tuple):
        return None
    text = code_of(nprocs.value)
    params = [p.name.value for p in func.params.params[1:]]
    for el, param in zip(spawned.value.elements, params):
        passed = code_of(el.value)
        if passed == text:
            return param
        if text.startswith(passed + "."):
            return param + text[len(passed) :]
    return None


def _has_side_effect(facts, body, depth: int = 0) -> bool:
    """Does `body` write files or print/log (directly or through a helper of this file)?"""
    for call in calls_in(body):
        callee = facts.index.callee_of(call)
        if callee is not None and depth < 2 and _has_side_effect(facts, callee.body, depth + 1):
            return True
        q = facts.names.call_qual(call) or dotted(call.func) or ""
        if q in ("torch.save", "print") or q.startswith(("logging.", "wandb.")) or "SummaryWriter" in q:
            return True
        if method_name(call) in ("info", "warning", "add_scalar", "save"):
            return True
    return False


def _spawn_local_indices(facts) -> dict[cst.FunctionDef, tuple[str, str | None]]:
    """The process index of each mp.spawn target that runs on several nodes and joins with a global rank
    built from it (`rank = args.nr * args.gpus + gpu`): there `gpu == 0` is true once per node. With it,
    the name init_process_group's rank is passed as, when it is a plain name (`rank`)."""
    out = {}
    for func, spawn in spawns(facts):
        if _node_rank(facts, func, spawn) is None and not _multi_node_world(facts, func):
            continue  # one node: the process index is the global rank
        index = func.params.params[0].name.value
        inits = [c for c in facts.launch.init_calls if facts.index.enclosing(c, cst.FunctionDef) is func]
        given = [kwarg(c, "rank") for c in inits]
        if given and all(a is not None and _index_only(facts, func, a.value, index) is None for a in given):
            names = {a.value.value for a in given if type(a.value) is cst.Name}  # type: ignore[union-attr]
            out[func] = (index, names.pop() if len(names) == 1 else None)  # (init's rank = the index: spawned_ranks)
    return out


def _local_rank_zero_tests(ranks: Ranks, test: cst.BaseExpression, index: str | None = None) -> list[cst.Comparison]:
    """`local_rank == 0`, `args.local_rank in [-1, 0]`, ... inside an if-test (possibly within and/or);
    `index` names a spawn target's process index that is a local rank there."""
    out = []
    for n in walk(test):
        if not (isinstance(n, cst.Comparison) and len(n.comparisons) == 1):
            continue
        if index is not None and type(n.left) is cst.Name and n.left.value == index:
            if type(n.comparisons[0].operator) is cst.Equal and code_of(n.comparisons[0].comparator) == "0":
                out.append(n)
            continue
        if ranks.is_local_rank(n.left):
            if ranks.takes(n) == (True, False) or ranks.takes(n)[0] is True:
                out.append(n)
    return out


EXAMPLES = (
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if local_rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="GPUs follow the local rank, the one writer the global rank:",
    ),
    fixes(
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def train(gpu, args):
            rank = args.nr * args.gpus + gpu
            dist.init_process_group("nccl", init_method="env://", world_size=args.world_size, rank=rank)
            torch.cuda.set_device(gpu)
            model = DDP(nn.Linear(4, 1).cuda(gpu), device_ids=[gpu])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4).cuda(gpu)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 5 == 0 and gpu == 0:
                    print(f"step {step} loss {loss.item():.4f}")


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--nodes", type=int, default=1)
            parser.add_argument("--gpus", type=int, default=1)
            parser.add_argument("--nr", type=int, default=0)
            args = parser.parse_args()
            args.world_size = args.gpus * args.nodes
            mp.spawn(train, nprocs=args.gpus, args=(args,))
        """,
        """
        import argparse

        import torch
        import torch.distributed as dist
        import torch.multiprocessing as mp
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP


        def train(gpu, args):
            rank = args.nr * args.gpus + gpu
            dist.init_process_group("nccl", init_method="env://", world_size=args.world_size, rank=rank)
            torch.cuda.set_device(gpu)
            model = DDP(nn.Linear(4, 1).cuda(gpu), device_ids=[gpu])
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            for step in range(10):
                loss = model(torch.randn(8, 4).cuda(gpu)).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
                if step % 5 == 0 and rank == 0:
                    print(f"step {step} loss {loss.item():.4f}")


        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--nodes", type=int, default=1)
            parser.add_argument("--gpus", type=int, default=1)
            parser.add_argument("--nr", type=int, default=0)
            args = parser.parse_args()
            args.world_size = args.gpus * args.nodes
            mp.spawn(train, nprocs=args.gpus, args=(args,))
        """,
        note=(
            "In an mp.spawn target on several nodes that joins with a rank built from its process index, "
            "the index is the local rank: `gpu == 0` prints once per node; the rank it joins with is tested instead:"
        ),
    ),
    clean(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        rank = int(os.environ["RANK"])
        local_rank = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local_rank)
        dist.init_process_group("nccl")
        model = DDP(nn.Linear(4, 1).cuda(), device_ids=[local_rank])
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4).cuda()).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            torch.save(model.module.state_dict(), "model.pt")
        """,
        note="Each rank in its place:",
    ),
    fixes(
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds, num_replicas=dist.get_world_size(), rank=local_rank)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
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
        from torch.utils.data import DataLoader, TensorDataset
        from torch.utils.data.distributed import DistributedSampler

        local_rank = int(os.environ["LOCAL_RANK"])
        dist.init_process_group("gloo")
        ds = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
        sampler = DistributedSampler(ds)
        loader = DataLoader(ds, batch_size=8, sampler=sampler)
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(2):
            sampler.set_epoch(epoch)
            for x, y in loader:
                loss = nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
        """,
        note=(
            "A sampler keyed on the local rank gives every node the same shard; the process group knows the right one:"
        ),
    ),
)
