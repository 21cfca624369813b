"""DDP407: TensorBoard / W&B / MLflow trackers on every rank."""

from __future__ import annotations

import libcst as cst

from ..analysis.effects import TRACKER_CTORS, TRACKER_MODULES
from ..analysis.local_writes import EVERY_RANK_TRACKER
from ..edits import guard_site, guardable
from ..examples import clean, fixes
from ..hoisted_calls import to_hoist
from ..module_guards import guard_module_writes
from ..rule import Context, Rule
from ..syntax import assign_targets, assigned_value, dotted, receiver, walk


class UnguardedTracker(Rule):
    code = "DDP407"
    distributed_only = True
    name = "unguarded-tracker"
    provides = frozenset({"hoisted"})  # its guards take training and collectives out first (guard_site)
    message = "experiment tracker created on every rank: one event file or run per process"
    docs = """
## What
`SummaryWriter(...)`, `wandb.init`, `wandb.log`, `mlflow.*` on every rank, and every use of a
tracker that exists on rank 0 only: calls on it, reads of it and assignments into it
(`writer.add_scalar(...)`, `experiment.config.update(...)`, `wandb.run.name = ...`), whether this
rule made it rank-0 only or the script did (`writer = SummaryWriter() if rank == 0 else None`,
`if rank == 0: wandb.init(...)`). A use under a test of the tracker itself (`if writer is not None:`)
is left alone.

A tracker created inside one of the script's own modules with no rank test around it there
(`self.writer = SummaryWriter()` in the `__init__` of a `Trainer` class of `trainer.py`) is reported
at the script's call (`Trainer(...)`), with the module's file and line, and the fix makes the same
edits in the module, with a rank test decided at run time (true in a plain run and on rank 0 however
the ranks were launched), so every entry point importing the module stays correct:
```python
        self.writer = SummaryWriter() if not dist.is_initialized() or dist.get_rank() == 0 else None
        ...
        if not dist.is_initialized() or dist.get_rank() == 0:
            save_config_file(self.writer.log_dir, self.args)
```
Every use of `self.writer` in that module is guarded (its `log_dir` handed to a log file, a config
or a checkpoint path too), or, when one cannot be (`path = self.writer.log_dir`), none is and the
finding says which line.

## Why
Every process creates its own event file / run and logs its own (partial) numbers: N runs in the
dashboard, or N interleaved curves in one. A tracker that exists on rank 0 only makes every other
rank fail on its first use: `AttributeError: 'NoneType' object has no attribute 'add_scalar'`, or
W&B's `You must call wandb.init() before wandb.log()`.

## Example
```python
run = wandb.init(project="p")
run.name = "baseline"
wandb.config.update({"lr": lr})
...
wandb.log({"loss": loss.item()})
```
becomes
```python
run = wandb.init(project="p") if RANK == 0 else None
if RANK == 0:
    run.name = "baseline"
    wandb.config.update({"lr": lr})
...
if RANK == 0:
    wandb.log({"loss": loss.item()})
```
The handle stays bound on every rank (to `None` off rank 0), so passing it around keeps working;
every statement that uses it is guarded.

## Fix safety
Safe, for the whole chain or none of it: when one use cannot take a guard of its own (it binds a
name, `run_dir = wandb.run.dir`, or shares its line), the tracker and all its uses get the diagnostic
only, since guarding some of them would leave the others failing on the other ranks. A value a use
logs that trains or issues a collective (`wandb.log({"loss": train_epoch(model, loader, opt)})`) is
first computed on every rank, `train_epoch_result = train_epoch(model, loader, opt)`, and only the log
is rank 0's; inside a comprehension or a lambda it cannot be taken out, and the chain is reported.
"""

    def run(self, ctx: Context) -> None:
        for chain in _chains(ctx):
            self._fix(ctx, chain)
        harm = "one event file or run per process"
        guard_module_writes(
            ctx, self, EVERY_RANK_TRACKER, "experiment tracker", harm, _is_tracker, None, _planner, "creates an"
        )

    def _fix(self, ctx: Context, chain: "_Chain") -> None:
        """Guard the tracker and everything that needs it, or, when one use cannot be guarded, none of them."""
        facts = ctx.facts
        key = chain.name
        if not chain.creations and not chain.rank0 and key not in TRACKER_MODULES:
            return
        blocked = _blocked(facts, chain)
        if blocked:
            where = ", ".join(f"line {facts.index.position(n).start.line}" for n in blocked[:3])
            why = f"; a use of {key} cannot be guarded on its own ({where}): guard the tracker and its uses by hand"
            for call, _ in chain.creations:
                ctx.report(call, self.message + why, fix="none")
            for node, _ in chain.uses:
                ctx.report(node, "tracker used on every rank: log from rank 0 only" + why, fix="none")
            return
        for call, bound in chain.creations:
            if not bound:
                guard_site(ctx, call)
            elif ctx.report(call):
                cond = ctx.rank0(call)
                ctx.plan.replace(
                    call,
                    lambda n, cond=cond: cst.IfExp(
                        test=cst.parse_expression(cond),
                        body=n,
                        orelse=cst.Name("None"),
                        whitespace_before_if=cst.SimpleWhitespace(" "),
                        whitespace_after_if=cst.SimpleWhitespace(" "),
                        whitespace_before_else=cst.SimpleWhitespace(" "),
                        whitespace_after_else=cst.SimpleWhitespace(" "),
                    ),
                )
        for node, _ in chain.uses:
            guard_site(ctx, node, "tracker used on every rank: log from rank 0 only")


def _chains(ctx: Context) -> list["_Chain"]:
    """Every tracker of this source: where every rank creates it, and its uses on every rank."""
    facts = ctx.facts
    ranks = facts.ranks
    inits = {f"{m}.init" for m in TRACKER_MODULES}
    chains: dict[str, _Chain] = {}  # tracker (a handle, or a tracker module) -> what uses it
    for call in facts.names.calls_matching(lambda q: q in TRACKER_CTORS or q in inits):
        site = facts.index.site(call)
        targets = assign_targets(site.stmt)
        module = (facts.names.call_qual(call) or "").split(".")[0]
        keys = [module] if module in TRACKER_MODULES else []
        value = assigned_value(site.stmt)
        if targets and (value is call or (isinstance(value, cst.IfExp) and call in (value.body, value.orelse))):
            keys += targets  # writer = SummaryWriter(...), or `... if is_master else None`
        elif targets:
            continue  # `x = f(SummaryWriter(...))`: not a handle this rule can follow
        if not keys:
            continue
        chain = next((chains[k] for k in keys if k in chains), None) or _Chain(keys[-1])
        for key in keys:  # `experiment = wandb.init(...)`: the handle and the module are one tracker
            other = chains.get(key)
            if other is not None and other is not chain:
                chain.merge(other)
                for k, c in list(chains.items()):
                    if c is other:
                        chains[k] = chain
            chains[key] = chain
        chain.rank0 |= ranks.rank_guarded(call)
        if not ranks.rank_guarded(call):
            chain.creations.append((call, bool(targets)))
    for module in TRACKER_MODULES:  # a run started elsewhere (a module of the script)
        if module in facts.names.aliases.values():
            chains.setdefault(module, _Chain(module))
    if not chains:
        return []
    params = {k.split(".")[-1]: k for k in chains if k not in TRACKER_MODULES}
    for node, stmt in _uses(facts, chains, params, inits):
        key = _tracker_of(facts, node, chains, params)
        if key is None or ranks.rank_guarded(node) or _checked(facts, node, key):
            continue
        chains[key].uses.append((node, stmt))
    return list({id(c): c for c in chains.values()}.values())


def _blocked(facts, chain: "_Chain") -> list[cst.CSTNode]:
    """The uses of the tracker that cannot take a guard of their own (nor have what every rank must run,
    training or a collective, taken out of them first)."""
    return [
        node
        for node, stmt in chain.uses
        if not _guardable_use(facts, stmt, chain.name) or to_hoist(facts, node) is None
    ]


def _is_tracker(facts, call: cst.Call) -> bool:
    q = facts.names.call_qual(call) or ""
    return q in TRACKER_CTORS or q in {f"{m}.init" for m in TRACKER_MODULES}


def _planner(lines: list[int], what: str, match, where: str, guarded: list[int]):
    """In one of the script's own modules: the tracker created at `lines` becomes rank-0 only there, with
    every use of it (`self.writer = SummaryWriter() if not dist.is_initialized() or dist.get_rank() == 0
    else None`; `self.writer.add_scalar(...)` guarded alike), all of it or none."""

    def plan(ctx: Context) -> str | None:
        ctx.joins_elsewhere()  # the module does not know how its caller launched: ask the process group
        facts = ctx.facts
        line_of = lambda n: facts.index.position(n).start.line  # noqa: E731
        chains = [c for c in _chains(ctx) if any(line_of(call) in lines for call, _ in c.creations)]
        if not chains:
            return f"the {what} at {where}:{lines[0]} is not bound to a name the fix can follow"
        for chain in chains:
            blocked = _blocked(facts, chain)
            if blocked:
                shown = ", ".join(f"{where}:{line_of(n)}" for n in blocked[:3])
                return f"a use of {chain.name} cannot be guarded on its own ({shown})"
            assert ctx.rule is not None
            ctx.rule._fix(ctx, chain)  # type: ignore[attr-defined]
            guarded.extend(line_of(call) for call, _ in chain.creations)
        return None

    return plan


class _Chain:
    """A tracker: where every rank creates it, whether it is rank-0 only already, and its uses on every rank."""

    def __init__(self, name: str) -> None:
        self.name = name  # the handle, or the tracker module
        self.creations: list[tuple[cst.Call, bool]] = []  # (the call, bound to a name)
        self.rank0 = False
        self.uses: list[tuple[cst.CSTNode, cst.CSTNode]] = []  # (node, its statement)

    def merge(self, other: "_Chain") -> None:
        self.creations += [c for c in other.creations if c not in self.creations]
        self.rank0 |= other.rank0
        self.uses += other.uses


# Objects a tracker module builds without a run: media for a later log call, settings, logins.
RUN_FREE = {"Image", "Table", "Histogram", "Artifact", "Video", "Audio", "Object3D", "Html", "login", "Settings"}


def _uses(facts, chains, params, inits):
    """Calls on a tracker, reads of it and assignments into it (`writer.add_scalar(...)`,
    `run_dir = wandb.run.dir`, `wandb.run.name = ...`); a context manager (`with mlflow.start_run():`)
    is not one."""
    parent = facts.index.parent
    for call in facts.index.calls:
        if (facts.names.call_qual(call) or "") in inits or isinstance(parent.get(call), (cst.Decorator, cst.WithItem)):
            continue
        recv = receiver(call)
        if recv is not None and dotted(recv) is not None:
            if call.func.attr.value in RUN_FREE:  # type: ignore[attr-defined]
                continue
            yield call, facts.index.site(call).stmt
    for stmt in facts.index.assigns:
        for target in stmt.targets:
            if isinstance(target.target, (cst.Attribute, cst.Subscript)):
                yield target.target, facts.index.site(stmt).stmt
    for node in walk(facts.module):
        if isinstance(node, cst.Attribute) and dotted(node.value) is not None:
            up = parent.get(node)
            if isinstance(up, cst.Attribute) and up.value is node:
                continue  # part of a longer chain
            if isinstance(up, cst.Call) and up.func is node:
                continue  # a call, above
            if isinstance(up, cst.AssignTarget) or (isinstance(up, cst.Decorator)):
                continue
            yield node, facts.index.site(node).stmt


def _root(node: cst.CSTNode) -> cst.BaseExpression | None:
    """What a call or an assigned attribute/item is reached through: `writer` in `writer.add_scalar(...)`,
    `wandb.run` in `wandb.run.name = ...`."""
    if isinstance(node, cst.Call):
        return receiver(node)
    if isinstance(node, cst.Subscript):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.value
    return None


def _tracker_of(facts, node, chains, params) -> str | None:
    root = _root(node)
    name = dotted(root) if root is not None else None
    if name is None:
        return None
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if prefix in chains and prefix not in TRACKER_MODULES:
            return prefix
        if i == len(parts) and parts[-1] in params and prefix != "self":
            return params[parts[-1]]  # the handle passed on: def log_epoch(writer, ...)
    module = (facts.names.qualname(root) or "").split(".")[0]
    return module if module in chains else None


def _checked(facts, node, key: str) -> bool:
    """Is `node` under a test of the tracker itself (`if writer is not None:`, `if wandb.run:`)?"""
    spelled = key.split(".")[-1]
    for anc in facts.index.ancestors(node):
        if isinstance(anc, (cst.If, cst.IfExp, cst.While)) and any(
            isinstance(n, (cst.Name, cst.Attribute)) and (dotted(n) or "").split(".")[-1] in (spelled, "run")
            for n in walk(anc.test)
        ):
            return True
        if isinstance(anc, cst.FunctionDef):
            return False
    return False


def _guardable_use(facts, stmt: cst.CSTNode, key: str) -> bool:
    """A use that can take a rank-0 guard of its own: a call statement, or an assignment into the tracker."""
    if not guardable(facts, stmt) or not isinstance(stmt, cst.SimpleStatementLine):
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
        return True
    if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
        targets = small.targets if isinstance(small, cst.Assign) else [small]
        return all(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in targets)
    return False


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        dist.init_process_group("gloo")
        writer = SummaryWriter("runs/exp")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            writer.add_scalar("loss", loss.item(), step)
        writer.close()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        RANK = int(os.environ.get("RANK", 0))

        dist.init_process_group("gloo")
        writer = SummaryWriter("runs/exp") if RANK == 0 else None
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if RANK == 0:
                writer.add_scalar("loss", loss.item(), step)
        if RANK == 0:
            writer.close()
        """,
        note="One event file, from rank 0; the name stays bound (to `None`) on the other ranks:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torch.utils.tensorboard import SummaryWriter

        dist.init_process_group("gloo")
        rank = dist.get_rank()
        writer = SummaryWriter("runs/exp") if rank == 0 else None
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if writer is not None:
                writer.add_scalar("loss", loss.item(), step)
        """,
        note="A writer on rank 0 only, used where it exists:",
    ),
)
