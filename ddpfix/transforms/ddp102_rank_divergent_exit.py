"""DDP102: return/break/continue/raise on a rank- or data-dependent condition in a synchronising loop."""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.ranks import Ranks
from ..edits import distributed_test
from ..examples import clean, fixes
from ..rule import SAFE, Context, Order, Rule
from ..syntax import calls_in, child_nodes, code_of, dotted, kwarg, method_name, positional, walk

DATA_DEPENDENT = re.compile(r"isnan|isinf|isfinite|\.item\(\)|loss|accuracy|\bacc\b|_acc\b|metric|score|perplexity")
EXITS = (cst.Return, cst.Break, cst.Continue, cst.Raise)
AGREEING = {"all_reduce", "broadcast", "broadcast_object_list", "all_gather", "all_gather_object"}
TEST_CALLS = {"isnan", "isinf", "isfinite", "any", "all", "isclose", "allclose", "equal"}


class RankDivergentExit(Rule):
    code = "DDP102"
    name = "rank-divergent-exit"
    message = "loop exit on a condition that can differ between ranks: the other ranks wait in the next collective"
    fix = SAFE
    docs = """
## What
A `return`, `break`, `continue` or `raise` under a condition that depends on the rank or on this
rank's data (`if torch.isnan(loss): continue`, `if loss.item() < target: break`, early stopping's
`if bad_epochs > patience: break` where `bad_epochs` counts this rank's validation results,
`if rank == 0 and step > n: break`) inside a loop that synchronises (a backward through DDP, or a
collective). A condition the ranks already share is not one: a flag all-reduced or broadcast first
(`dist.all_reduce(stop, op=dist.ReduceOp.MAX)` then `if stop.item(): break`), or a value returned by
a helper that issues a collective. A name holds this rank's data only where an assignment from
such data can reach the condition: above it, or anywhere in a loop around both (a step counter
restored from a checkpoint before the loop stays shared, even when the loop later builds a new
checkpoint from its losses). Each exit is reported once, at the loop it leaves.

## Why
DDP's backward is a collective. When one rank skips a step the others block in their all-reduce;
worse, a later collective of one rank can pair with a different one of another and return garbage
before everything times out. Without `TORCH_DISTRIBUTED_DEBUG=DETAIL` nothing points at this line.

## Example
```python
for epoch in range(epochs):
    ...
    if val_loss < target_loss:
        break
```
becomes a decision every rank takes together:
```python
for epoch in range(epochs):
    ...
    stop = torch.tensor(float(val_loss < target_loss), device=device)
    if DISTRIBUTED:
        dist.all_reduce(stop, op=dist.ReduceOp.MAX)
    if stop.item():
        break
```
Every rank leaves when one of them would have. A plain run has no process group: the flag is its own
condition, and it leaves exactly when it did before. A `continue` gets a `skip` flag the same way.

## Fix safety
Safe when the condition depends on this rank's data, is a comparison, a `not`, an `isnan`-style
test, a `bool(...)` or an `and`/`or` of them (`float()` of it is what `if` tests), is the only rank- or
data-dependent condition between the exit and its loop, is not an `elif`, and the flag has a device
the process group accepts (the script's `device`, or the CPU when the group has a gloo backend). A
condition that depends on the rank itself (`if rank == 0: break`), or any other shape, gets the
diagnostic only: which rank's decision should win is the script's business.
"""

    def run(self, ctx: Context) -> None:
        facts = ctx.facts
        ranks = facts.ranks
        if not (facts.models.ddp_calls or facts.launch.init_calls or facts.models.trained):
            return
        syncing = {loop for loop in facts.index.loops if _synchronises(ranks, loop)}
        if not syncing:
            return
        flows: dict[cst.CSTNode, _Flow] = {}
        fixed: set[cst.If] = set()
        flags: dict[tuple[cst.CSTNode, str], str] = {}
        seen: set[cst.CSTNode] = set()
        for exit_node in (n for loop in syncing for n in walk(loop.body) if type(n) in EXITS):
            if exit_node in seen:
                continue  # one exit, one finding, however many loops hold it
            seen.add(exit_node)
            loop = _loop_left(facts, exit_node, syncing)
            if loop is None:
                continue
            scope = facts.index.scope_of(loop)
            flow = flows.get(scope)
            if flow is None:
                flow = flows[scope] = _Flow(facts, scope)
            divergent = [
                (c, ranks.is_rank_test(c.test))
                for c in _conditions(facts, exit_node, loop)
                if ranks.is_rank_test(c.test) or flow.data_dependent(c.test, c)
            ]
            if not divergent:
                continue
            cond, on_rank = divergent[0]
            kind = type(exit_node).__name__.lower()
            why = "the rank" if on_rank else "this rank's data"
            message = (
                f"`{kind}` on a condition that depends on {why}: ranks leave the synchronising loop at "
                "different steps and the others hang; decide together (all_reduce a flag)"
            )
            device = _flag_device(ctx, cond)
            if (
                len(divergent) > 1
                or on_rank
                or not isinstance(cond, cst.If)
                or isinstance(facts.index.parent.get(cond), cst.If)  # an `elif`
                or not _recognised(cond.test)
                or device is None
            ):
                ctx.report(exit_node, message, fix="none")
                continue
            if ctx.report(exit_node, message) and cond not in fixed:
                fixed.add(cond)
                preferred = "skip" if isinstance(exit_node, cst.Continue) else "stop"
                if (scope, preferred) not in flags:  # one flag name per function, set afresh before each exit
                    flags[scope, preferred] = ctx.plan.fresh(preferred)
                self._agree(ctx, cond, device, flags[scope, preferred])

    @staticmethod
    def _agree(ctx: Context, cond: cst.If, device: str, flag: str) -> None:
        plan = ctx.plan
        torch = plan.ref("torch", "torch", style="import")
        dist = plan.ref("torch.distributed", "dist", style="import")
        test = code_of(cond.test.with_changes(lpar=[], rpar=[]))
        device_arg = f", device={device}" if device else ""
        stmts = plan.statements(
            """
            {flag} = {torch}.tensor(float({test}){device})
            if {D}:
                {dist}.all_reduce({flag}, op={dist}.ReduceOp.MAX)
            """,
            flag=flag,
            torch=torch,
            test=test,
            device=device_arg,
            D=distributed_test(ctx),
            dist=dist,
        )
        plan.insert_before(cond, stmts, order=Order.AGREEMENT)
        plan.replace(cond.test, lambda n, f=flag: cst.parse_expression(f"{f}.item()"))


class _Flow:
    """Within one function: which names hold this rank's data (loss, accuracy, counters set from
    them) where they are read, and which the ranks share (passed through a collective first). An
    assignment taints its names from where it runs on: below it, and all through a loop around it
    (`checkpoint = {"best_val_loss": ...}` in the training loop does not make the
    `iter_num = checkpoint["iter_num"]` of a resume above the loop this rank's data)."""

    def __init__(self, facts, scope: cst.CSTNode) -> None:
        self.index = facts.index
        self.scope = scope
        self.tainted: dict[str, list[cst.CSTNode]] = {}  # name -> the assignments that make it this rank's data
        self.agreed: set[str] = set()
        self.modules = set(facts.names.aliases)  # imported names: `torch` in `torch.isnan(loss)`
        index = facts.index
        for call, op in facts.ranks.collectives_in(scope):
            if op in AGREEING or op.endswith("()"):
                self.agreed |= _names(call)
                if op.endswith("()"):  # `val_loss = reduce_mean(val_loss)`: what the helper returns is shared
                    self.agreed |= _targets(index.site(call).stmt)
        assigns = [
            n
            for n in walk(scope)
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and index.scope_of(n) is scope
        ]
        done: set[cst.CSTNode] = set()
        changed = True
        while changed:
            changed = False
            for a in assigns:
                if a.value is None or a in done:
                    continue
                targets = _names_of(a.targets[0].target if isinstance(a, cst.Assign) else a.target)
                if not targets or targets <= self.agreed:
                    continue
                names = _names(a.value) - self.modules
                if names and names <= self.agreed and not isinstance(a, cst.AugAssign):
                    self.agreed |= targets  # `should_stop = stop.item() > 0`
                    done.add(a)
                    changed = True
                elif self.data_dependent(a.value, a) or any(
                    isinstance(c, (cst.If, cst.While)) and self.data_dependent(c.test, c)
                    for c in index.ancestors(a)
                    if index.contains(scope, c)
                ):
                    for name in targets - self.agreed:  # set from this rank's data, or on its outcome
                        self.tainted.setdefault(name, []).append(a)
                    done.add(a)
                    changed = True

    def data_dependent(self, expr: cst.CSTNode, at: cst.CSTNode) -> bool:
        """Does `expr`, read at `at`, depend on this rank's data?"""
        names = _names(expr) - self.modules
        if names and names <= self.agreed:
            return False
        if any(self._reaches(d, at) for n in names for d in self.tainted.get(n, ())):
            return True
        return bool(DATA_DEPENDENT.search(code_of(expr)))

    def _reaches(self, assign: cst.CSTNode, at: cst.CSTNode) -> bool:
        """May what `assign` binds still be there at `at`: it runs before, or in a loop that holds both."""
        if self.index.before(assign, at):
            return True
        for anc in self.index.ancestors(assign):
            if anc is self.scope:
                break
            if isinstance(anc, (cst.For, cst.While)) and self.index.contains(anc, at):
                return True
        return False


def _names(node: cst.CSTNode) -> set[str]:
    """The variables an expression reads (`loss` in `loss.item()`, not `item`; not keywords)."""
    if isinstance(node, cst.Name):
        return {node.value}
    out: set[str] = set()
    for child in child_nodes(node):
        if isinstance(node, cst.Attribute) and child is node.attr:
            continue
        if isinstance(node, cst.Arg) and child is node.keyword:
            continue
        out |= _names(child)
    return out


def _names_of(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _names_of(e.value)}
    return set()


def _targets(stmt: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    for n in walk(stmt):
        if isinstance(n, cst.AssignTarget):
            out |= _names_of(n.target)
    return out


def _synchronises(ranks: Ranks, loop: cst.CSTNode) -> bool:
    if ranks.collectives_in(loop.body):
        return True
    return any(method_name(c) == "backward" for c in calls_in(loop.body))


def _loop_left(facts, exit_node: cst.CSTNode, syncing: set) -> cst.CSTNode | None:
    """The synchronising loop an exit leaves: the innermost loop for `break`/`continue` (None when that
    one does not synchronise); for `return`/`raise`, the innermost synchronising loop around it."""
    leaves_all = isinstance(exit_node, (cst.Return, cst.Raise))
    for anc in facts.index.ancestors(exit_node):
        if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(anc, (cst.For, cst.While)):
            if anc in syncing:
                return anc
            if not leaves_all:
                return None
    return None


def _conditions(facts, exit_node: cst.CSTNode, loop: cst.CSTNode) -> list[cst.CSTNode]:
    """The `if`s and `while`s between `loop` and the exit, outermost first."""
    out = []
    child = exit_node
    for anc in facts.index.ancestors(exit_node):
        if anc is loop:
            break
        if isinstance(anc, (cst.If, cst.While)) and child is not anc.test:
            out.append(anc)
        child = anc
    return list(reversed(out))


def _recognised(test: cst.BaseExpression) -> bool:
    """A test `float()` reads exactly as `if` does: a comparison, `not x`, `bool(x)`, `torch.isnan(x)`-style
    calls, or `and`/`or` of them."""
    if isinstance(test, cst.Comparison):
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return True
    if isinstance(test, cst.BooleanOperation):
        return _recognised(test.left) and _recognised(test.right)
    if isinstance(test, cst.Call):
        if dotted(test.func) == "bool" and len(test.args) == 1 and not test.args[0].star:
            return True  # `float(bool(x))` is what `if` tests, whatever `x` is
        name = (dotted(test.func) or "").rsplit(".", 1)[-1] if dotted(test.func) else method_name(test)
        return name in TEST_CALLS
    return False


def _flag_device(ctx: Context, at: cst.CSTNode) -> str | None:
    """Where the flag tensor lives: the script's device, or the CPU ("") when the process group has a
    gloo backend (the one DDP001 sets up has one); None when neither can be told."""
    facts = ctx.facts
    dev = facts.models.device_var(at)
    if dev is not None:
        return dev[0]
    inits = facts.launch.init_calls
    if not inits:
        return "" if facts.launch.joins_elsewhere is False else None
    for call in inits:
        backend = positional(call, 0) or kwarg(call, "backend")
        text = code_of(backend.value) if backend is not None else ""
        if "cpu:gloo" not in text and text.strip("'\"") != "gloo":
            return None
    return ""


__all__ = ["RankDivergentExit"]


EXAMPLES = (
    fixes(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            if torch.isnan(loss):
                continue
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        """
        import os

        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        WORLD_SIZE = int(os.environ.get("WORLD_SIZE", 1))
        DISTRIBUTED = WORLD_SIZE > 1

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(10):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            skip = torch.tensor(float(torch.isnan(loss)))
            if DISTRIBUTED:
                dist.all_reduce(skip, op=dist.ReduceOp.MAX)
            if skip.item():
                continue
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="One rank's NaN would skip its backward while the others wait in their all-reduce: the ranks decide together:",
    ),
    clean(
        """
        import torch
        import torch.distributed as dist
        import torch.nn as nn
        from torch.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("gloo")
        model = DDP(nn.Linear(4, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for step in range(100):
            if step >= 10:
                break
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
        dist.destroy_process_group()
        """,
        note="An exit every rank takes at the same step:",
    ),
)
