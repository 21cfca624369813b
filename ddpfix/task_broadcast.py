"""DDP210's fix: rank 0's draw of the task, sent to every rank once the process group is joined.

A value the script draws once with no seed (`W_target = torch.randn(8, 1)`, `np.random.shuffle(
indices)`) differs by rank under torchrun. Where DDP001 sets the process group up (`Context.joins_at`),
rank 0's value is sent to the others under the distributed test, so every rank fits the same task and
a plain run draws as before: a torch tensor bound to one name is broadcast in place
(`dist.broadcast(W_target, src=0)`); any other value the drawing statement binds to names, or a list
shuffled in place, is sent whole (`dist.broadcast_object_list`) and bound again. Where:

- a draw that runs after the setup (in the entry's block, below where the setup goes, or in a
  function only called from there; or at module level with a module-level setup, which
  `Context.finish` places above the first statement that needs the process group, this one
  included): right after the statement that draws it, one block for consecutive draws;
- a draw at module level when the setup is at the top of the entry: right after the setup (a tensor
  in place, so every function that reads it sees rank 0's draw; a value sent whole only where the
  entry is the `__main__` block, since from a function it would be bound again as a local), provided
  nothing at module level reads it first.

Anything else (a tensor that requires grad, a value on a device or a loader, a draw not bound to
names, under a test that differs by rank, in another function, or read before the process group is
joined) is reported with the reason and left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from .analysis.flow import binds, reads
from .edits import distributed_test
from .order import Order
from .syntax import calls_in, dotted, kwarg, single_small, strip_docstring

# draws from a global random generator (DDP210 reports those that define the task)
RANDOM = {
    "torch.randn",
    "torch.rand",
    "torch.randint",
    "torch.randperm",
    "torch.normal",
    "torch.rand_like",
    "torch.randn_like",
    "torch.randint_like",
    "numpy.random.rand",
    "numpy.random.randn",
    "numpy.random.randint",
    "numpy.random.normal",
    "numpy.random.uniform",
    "numpy.random.permutation",
    "numpy.random.choice",
    "random.random",
    "random.randint",
    "random.sample",
    "random.choice",
    "random.uniform",
    "random.gauss",
}
# torch's draws, which make tensors (NumPy's and Python's make arrays and numbers)
TORCH_DRAWS = frozenset(q for q in RANDOM if q.startswith("torch."))
# methods of a tensor that return a new, contiguous tensor (what `dist.broadcast` takes)
TENSOR_METHODS = {
    "to",
    "cuda",
    "cpu",
    "float",
    "double",
    "half",
    "long",
    "int",
    "view",
    "reshape",
    "unsqueeze",
    "squeeze",
    "mul",
    "add",
    "sub",
    "div",
    "pow",
    "abs",
    "exp",
    "clone",
    "detach",
    "contiguous",
}
TORCH_NAMES = ("torch", "dist", "torch_dist")  # what the setup reads, bound before it in the entry


Item = tuple[str, str]  # (TENSOR or OBJECT, the name sent)
TENSOR, OBJECT = "tensor", "object"  # dist.broadcast of a tensor in place / rank 0's value sent whole


@dataclass
class Broadcasts:
    """The broadcasts one pass plans: draw -> why it gets none (for the finding), and the blocks."""

    why_not: dict[cst.Call, str] = field(default_factory=dict)
    after: dict[cst.CSTNode, list[Item]] = field(default_factory=dict)  # statement -> what is sent after it
    after_setup: list[Item] = field(default_factory=list)  # module-level draws, sent after the setup
    bound_by: dict[str, cst.CSTNode] = field(default_factory=dict)  # a name sent after the setup -> its statement

    def keeping(self, names: set[str]) -> Broadcasts:
        """These broadcasts, for the statements that bind `names` only (the draws whose finding is fixed):
        every name such a statement binds (`a, b = np.random.rand(2), np.random.rand(2)`) is sent."""
        after = {s: items for s, items in self.after.items() if any(n in names for _, n in items)}
        kept = {self.bound_by[n] for n in names if n in self.bound_by}
        setup = [i for i in self.after_setup if self.bound_by[i[1]] in kept]
        return Broadcasts(self.why_not, after, setup, self.bound_by)


def plan_broadcasts(ctx, joins_at, drawn: dict[cst.Call, str], used: list[cst.Call]) -> Broadcasts:
    """Which of the draws `used` (each bound to `drawn[draw]`) can be broadcast, and where."""
    facts = ctx.facts
    out = Broadcasts()
    setup = _Setup(facts, joins_at) if joins_at is not None else None
    for draw in used:
        stmt = facts.index.site(draw).stmt
        what = _what(facts, draw, stmt, drawn.get(draw))
        why = what if isinstance(what, str) else None
        if why is None and setup is None:
            why = "the script joins its process group itself"
        if why is None:
            why = _rank_test(facts, stmt)
        if why is not None:
            out.why_not[draw] = why
            continue
        assert setup is not None and not isinstance(what, str)
        kind, names = what
        items = [(kind, n) for n in names]
        if setup.precedes(stmt):
            known = out.after.setdefault(stmt, [])
            known += [i for i in items if i not in known]
        elif facts.index.scope_of(stmt) is facts.module and setup.anchor() is not None:
            read = next((r for n in names if (r := _read_at_module_level(facts, stmt, n, setup)) is not None), None)
            if read is not None:
                out.why_not[draw] = (
                    f"`{names[0]}` is read at module level (line {read}) before the process group is joined"
                )
            elif kind == OBJECT and isinstance(setup.joins_at, cst.FunctionDef):
                out.why_not[draw] = (
                    f"it is drawn at import and read from {setup.joins_at.name.value}(): sent whole and bound "
                    "again there, it would need `global`"
                )
            else:
                out.after_setup += [i for i in items if i not in out.after_setup]
                out.bound_by.update({n: stmt for n in names})
        else:
            scope = facts.index.scope_of(stmt)
            where = f"in {scope.name.value}()" if isinstance(scope, cst.FunctionDef) else "here"
            out.why_not[draw] = f"it is drawn {where}, before the process group is joined"
    return out


class _Setup:
    """Where DDP001's setup goes: at module level (placed by `Context.finish` above the first statement
    that needs it), or at the top of the entry's block (a function's body, the `__main__` block's)."""

    def __init__(self, facts, joins_at) -> None:
        self.facts, self.joins_at = facts, joins_at
        self.block = None if joins_at is facts.module else list(joins_at.body.body)
        self.first = _setup_index(facts, self.block) if self.block is not None else 0

    def anchor(self) -> cst.CSTNode | None:
        """The statement the setup goes before (None: at module level, or at the end of the block)."""
        return self.block[self.first] if self.block is not None and self.first < len(self.block) else None

    def precedes(self, node: cst.CSTNode, depth: int = 0) -> bool:
        """Does the setup run before `node` on every path to it: below it in its block, or in a function
        every call of which is (a module-level setup goes above whatever needs the process group)?"""
        if self.block is None:
            return True
        if _top_index(self.facts, self.block, node) >= self.first:
            return True
        func = self.facts.index.enclosing(node, cst.FunctionDef)
        calls = self.facts.index.callers_of(func) if func is not None and depth < 3 else []
        return bool(calls) and all(self.precedes(c, depth + 1) for c in calls)


def apply_broadcasts(ctx, joins_at, planned: Broadcasts) -> None:
    """Insert the planned blocks: one per run of consecutive drawing statements of one block."""
    facts = ctx.facts
    groups: list[tuple[cst.CSTNode, list[Item]]] = []
    for stmt in sorted(planned.after, key=facts.index.order):
        items = planned.after[stmt]
        sent = {n for _, n in groups[-1][1]} if groups else set()
        if groups and _next_to(facts, groups[-1][0], stmt) and not reads(stmt) & sent:
            groups[-1] = (stmt, groups[-1][1] + items)
        else:
            groups.append((stmt, list(items)))
    if planned.after_setup:
        anchor = _Setup(facts, joins_at).anchor()
        assert anchor is not None  # (plan_broadcasts plans none after a setup at the end of its block)
        names = {n for _, n in planned.after_setup}
        lead = next((g for g in groups if _starts_group(facts, g, anchor, planned)), None)
        if lead is not None and not reads(anchor) & names and not _calls_own(facts, anchor):
            groups[groups.index(lead)] = (lead[0], planned.after_setup + lead[1])
        else:
            ctx.plan.insert_before(anchor, _block(ctx, planned.after_setup), order=Order.TASK_BROADCAST)
    for stmt, items in groups:
        ctx.plan.insert_after(stmt, _block(ctx, items), order=Order.TASK_BROADCAST)


def _block(ctx, items: list[Item]) -> list[cst.BaseStatement]:
    """`if DISTRIBUTED:` with rank 0's tensors broadcast in place, then its other values sent whole and
    bound again."""
    dist = ctx.plan.ref("torch.distributed", "dist", style="import")
    lines = [f"    {dist}.broadcast({n}, src=0)" for kind, n in items if kind == TENSOR]
    whole = [n for kind, n in items if kind == OBJECT]
    if whole:
        shared = ctx.plan.fresh("shared")
        lines += [f"    {shared} = [{', '.join(whole)}]", f"    {dist}.broadcast_object_list({shared}, src=0)"]
        lines.append(f"    {whole[0]} = {shared}[0]" if len(whole) == 1 else f"    {', '.join(whole)} = {shared}")
    return ctx.plan.statements(f"if {distributed_test(ctx)}:\n" + "\n".join(lines))


def _what(facts, draw: cst.Call, stmt: cst.CSTNode, name: str | None) -> tuple[str, list[str]] | str:
    """(TENSOR, [name]) for a torch tensor bound to one name, (OBJECT, names) for any other value the
    statement binds to names (or a list shuffled in place); else why it cannot be sent."""
    small = single_small(stmt)
    if isinstance(small, cst.Expr) and small.value is draw:  # `np.random.shuffle(indices)`
        if name is None or "." in name:
            return "what it shuffles in place is not a name of its own"
        return OBJECT, [name]
    if not isinstance(small, cst.Assign) or len(small.targets) != 1 or not facts.index.contains(small.value, draw):
        return "it is not bound to names"
    target, value = small.targets[0].target, small.value
    names = (
        [e.value.value for e in target.elements if isinstance(e.value, cst.Name)]
        if isinstance(target, cst.Tuple)
        else []
    )
    if isinstance(target, cst.Name):
        names = [target.value]
    elif not names or len(names) != len(target.elements):  # type: ignore[union-attr]
        return "it is not bound to names"
    calls = list(calls_in(value))
    if any(kwarg(c, "requires_grad") is not None or dotted(c.func) == "requires_grad_" for c in calls):
        return "it requires grad: a parameter the script trains, not data"
    if len(names) == 1 and facts.names.call_qual(draw) in TORCH_DRAWS and _tensor(facts, value):
        return TENSOR, names
    moved = any(isinstance(c.func, cst.Attribute) and c.func.attr.value in ("cuda", "to") for c in calls)
    if moved or any((dotted(c.func) or "").endswith("DataLoader") for c in calls):
        return "what it binds may not travel between processes as it is (a value on a device, or a loader)"
    return OBJECT, names


def _tensor(facts, expr: cst.BaseExpression) -> bool:
    """Is `expr` a new tensor: a torch draw, a tensor method of one, or arithmetic with one?"""
    if isinstance(expr, cst.Call):
        if facts.names.call_qual(expr) in TORCH_DRAWS:
            return True
        func = expr.func
        return isinstance(func, cst.Attribute) and func.attr.value in TENSOR_METHODS and _tensor(facts, func.value)
    if isinstance(expr, cst.BinaryOperation):
        return _tensor(facts, expr.left) or _tensor(facts, expr.right)
    if isinstance(expr, cst.UnaryOperation):
        return _tensor(facts, expr.expression)
    return False


def _rank_test(facts, stmt: cst.CSTNode) -> str | None:
    for anc in facts.index.ancestors(stmt):
        if isinstance(anc, (cst.If, cst.While)) and facts.ranks.depends_on_rank(anc.test):
            return "it is drawn under a test that differs by rank: a broadcast there would not be reached by every rank"
    return None


def _setup_index(facts, body: list) -> int:
    """Where the setup goes in the entry's body, or later: after its docstring and after every
    statement that binds a name the setup may read (`import torch.distributed as dist` in the body)."""
    names = set(TORCH_NAMES) | {facts.names.alias_for(q) for q in ("torch", "torch.distributed")} - {None}
    out = strip_docstring(body)
    for i, stmt in enumerate(body):
        if binds(stmt) & names:
            out = max(out, i + 1)
    return out


def _top_index(facts, body: list, node: cst.CSTNode) -> int:
    """The index in `body` of the statement that holds `node`."""
    ids = {id(s): i for i, s in enumerate(body)}
    for anc in (node, *facts.index.ancestors(node)):
        if id(anc) in ids:
            return ids[id(anc)]
    return -1


def _read_at_module_level(facts, stmt: cst.CSTNode, name: str, setup: _Setup) -> int | None:
    """The line of the first statement that runs at module level after `stmt` and before the setup and
    reads `name` (itself, or through a function of this file it calls other than the entry); None when
    none does."""
    body = list(facts.module.body)
    for later in body[body.index(stmt) + 1 :]:
        if isinstance(later, (cst.FunctionDef, cst.ClassDef)) or isinstance(
            single_small(later), (cst.Import, cst.ImportFrom)
        ):
            continue
        for part in setup.block[: setup.first] if later is setup.joins_at else [later]:  # type: ignore[index]
            callees = {facts.index.callee_of(c) for c in calls_in(part)} - {None, setup.joins_at}
            if name in reads(part) or any(name in reads(f.body) for f in callees):
                return facts.index.position(part).start.line
    return None


def _next_to(facts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """Is `b` the statement right after `a` in the same block?"""
    return facts.index.next_statement(a) is b


def _starts_group(facts, group: tuple[cst.CSTNode, list[Item]], anchor: cst.CSTNode, planned: Broadcasts) -> bool:
    """Does the run of drawing statements that ends at `group[0]` start at `anchor`?"""
    stmt = group[0]
    while stmt is not anchor:
        prev = _previous(facts, stmt)
        if prev is None or prev not in planned.after:
            return False
        stmt = prev
    return True


def _previous(facts, stmt: cst.CSTNode) -> cst.CSTNode | None:
    block = facts.index.parent.get(stmt)
    body = list(getattr(block, "body", ()))
    i = next((i for i, s in enumerate(body) if s is stmt), None)
    return body[i - 1] if i else None


def _calls_own(facts, stmt: cst.CSTNode) -> bool:
    """Does `stmt` call a function of this file (which may read the draw before it is broadcast)?"""
    return any(facts.index.callee_of(c) is not None for c in calls_in(stmt))


__all__ = ["RANDOM", "TENSOR_METHODS", "TORCH_DRAWS", "Broadcasts", "apply_broadcasts", "plan_broadcasts"]
