"""Values a script derives from per-rank totals before it shows them: `epoch_loss = running_loss /
len(loader.dataset)`, then `print(epoch_loss)` or `scheduler.step(epoch_loss)`; and values a function of
the script returns from its totals (`return running_loss / len(loader.dataset), accuracy`) and its
caller shows (`train_loss, train_acc = train_epoch(...)`, then `print(train_loss)`).

Such a value is as per-rank as the totals it reads, so the totals are reduced where the value is
derived (the statement then reads the reduced totals, and every later read of the value, a print, a
return, a scheduler's step, sees the run's number). That is done where the derivation is the last
binding of the name before the statement that shows it, in the same function, in a block that holds
that statement (not inside the loop that accumulates, nor in one branch of an `if`); anywhere else
the value is reported with no fix. A returned value has the totals reduced before the `return` (or
before the statement that derives what it returns), so the function returns the run's value to
every caller; that is done where every caller reaches its call alike and hands it no loader that
is not sharded.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis.flow import last_binding, own_targets, read_names, reads
from .metric_reduce import reached_alike, reducer_of
from .sharded_totals import reduces_on_cpu
from .syntax import dotted, walk


@dataclass(frozen=True)
class Derived:
    name: str  # the name shown (`epoch_loss`)
    node: cst.CSTNode  # what reads the totals: `epoch_loss = running_loss / len(...)`, or a function's `return`
    stmt: cst.CSTNode  # its statement
    totals: frozenset[str]  # the per-rank totals it reads
    why: str | None  # why the totals cannot be reduced there (None: they can)


@dataclass
class Sources:
    """Where a shown name can get a per-rank value from (derivations_of)."""

    derived: dict[str, list[cst.Assign]]  # a name -> its assignments that read totals (`x = total / n`)
    returned: set[str]  # names bound to what a function of the script returns from totals (`x = f(...)`)
    funcs: set[cst.FunctionDef]  # those functions
    scopes: dict[str, set[cst.CSTNode]]  # a total -> the functions (or the module) whose sharded loops accumulate it

    def __bool__(self) -> bool:
        return bool(self.derived or self.returned or self.funcs)

    def own(self, index, node: cst.CSTNode, names: set[str]) -> set[str]:
        """Those of `names` that a sharded loop of `node`'s own function accumulates."""
        scope = index.scope_of(node)
        return {n for n in names if scope in self.scopes.get(n, ())}

    def read(self, index, node: cst.CSTNode, totals: set[str]) -> frozenset[str]:
        """The totals `node` reads that a sharded loop of its own function accumulates (a `total` of
        `test()` over the whole test set is not the `total` that `train()` sums over its shard)."""
        return frozenset(self.own(index, node, read_names(node) & totals))


def derivations_of(index, totals: set[str], loops: list[cst.For], reduced: set[str]) -> Sources:
    """Where the values a script shows can come from `totals`, which the sharded `loops` accumulate:
    assignments of one name (`x = ...`) whose value reads any of them in the same function, and
    functions of the script that return them or a value derived from them, with the names bound to
    their calls. A value computed beside one that reached a collective (`reduced`, or bound from
    it: `tokens = reduced_tensor.item()`, then `tokens / elapsed_total`) is the script's own global
    figure and none of them."""
    scopes: dict[str, set[cst.CSTNode]] = {}
    for loop in loops:
        for n in walk(loop.body):
            if type(n) is not cst.AugAssign:
                continue
            target = n.target.value if type(n.target) is cst.Subscript else n.target  # `stats[0] += ...`
            if type(target) is cst.Name and target.value in totals:
                scopes.setdefault(target.value, set()).add(index.scope_of(n))
    downstream = set(reduced) | {
        a.targets[0].target.value
        for a in index.assigns
        if len(a.targets) == 1 and type(a.targets[0].target) is cst.Name and read_names(a.value) & reduced
    }
    sources = Sources({}, set(), set(), scopes)
    for assign in index.assigns:
        if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
            continue
        if sources.read(index, assign.value, totals) and not read_names(assign.value) & downstream:
            sources.derived.setdefault(assign.targets[0].target.value, []).append(assign)
    for func in index.funcs:
        if any(
            sources.read(index, ret.value, totals) or read_names(ret.value) & set(sources.derived)  # type: ignore[arg-type]
            for ret in _returns(index, func)
        ):
            sources.funcs.add(func)
    sources.returned |= {
        n
        for assign in index.assigns
        if type(assign.value) is cst.Call and index.callee_of(assign.value) in sources.funcs
        for n in own_targets(assign)
    }
    return sources


def _returns(index, func: cst.FunctionDef) -> list[cst.Return]:
    """The `return <value>` statements of `func` itself (not of a function inside it)."""
    return [n for n in walk(func) if type(n) is cst.Return and n.value is not None and index.scope_of(n) is func]


def derived_shown(
    index,
    node: cst.CSTNode,
    totals: set[str],
    candidates: Sources,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
    loaders: tuple[set[str], set[str]] | None = None,
    hoisted: frozenset[int] = frozenset(),
) -> list[Derived]:
    """The values `node` (a print, a scheduler's step) reads that were derived from `totals` (see the
    module's docstring); `candidates`: `derivations_of(index, totals)`; names in `skip` are left out.
    `loaders`: (every loader's name, the sharded ones'), to follow values returned by a function of
    the script too (None: not followed); `hoisted`: the ids of the calls a fix takes out of `node`'s
    statement, which every rank then runs."""
    stmt = index.site(node).stmt
    scope = index.scope_of(node)
    out, seen = [], set(totals) | set(skip)
    for n in walk(node):
        if type(n) is cst.Call and loaders is not None and index.callee_of(n) in candidates.funcs:
            name = f"{dotted(n.func)}()"  # `print(evaluate(model, loader))`: a rank-0 guard around the print
            why = (
                None
                if id(n) in hoisted
                else f"{name} is called in the statement that shows it, which rank 0 alone runs once converted"
            )
            out += [
                Derived(d.name, d.node, d.stmt, d.totals, why or d.why)
                for d in _returned(index, name, n, totals, candidates, loaders)
            ]
            continue
        if type(n) is not cst.Name or n.value in seen:
            continue
        if n.value not in candidates.derived and (loaders is None or n.value not in candidates.returned):
            continue
        parent = index.parent.get(n)
        if (type(parent) is cst.Attribute and parent.attr is n) or (type(parent) is cst.Arg and parent.keyword is n):
            continue
        seen.add(n.value)
        last = last_binding(index, scope, n.value, stmt)
        if last is None:
            continue
        if last in candidates.derived.get(n.value, ()):
            out.append(_derived(index, n.value, last, stmt, totals, candidates))
        elif loaders is not None and type(last) is cst.Assign and type(last.value) is cst.Call:
            out += _returned(index, n.value, last.value, totals, candidates, loaders)
    return out


def _derived(
    index, name: str, assign: cst.Assign, shown: cst.CSTNode, totals: set[str], candidates: Sources
) -> Derived:
    at = index.site(assign).stmt
    used = candidates.read(index, assign.value, totals)
    block = index.parent.get(at)
    why = (
        None
        if any(a is block for a in index.ancestors(shown))
        else f"{name} is computed from {', '.join(sorted(used))} in a block that does not hold the statement "
        "that shows it"
    )
    return Derived(name, assign, at, used, why)


def _returned(index, name: str, call: cst.Call, totals, candidates, loaders) -> list[Derived]:
    """The returns of the script's function `call` invokes that read `totals`, directly or through a value
    derived from them, each as shown under `name` (the caller's)."""
    func = index.callee_of(call)
    if func is None:
        return []
    every, sharded = loaders
    handed = {r for a in call.args for r in reads(a.value)} & every
    if handed and not handed & sharded:
        return []  # `val_loss = evaluate(model, val_loader)`: over data every rank holds whole
    why = None
    for caller in index.callers_of(func):
        handed = {r for a in caller.args for r in reads(a.value)} & (every - sharded)
        if handed:
            why = f"{func.name.value} is also handed {', '.join(sorted(handed))}, which is not sharded"
            break
    out = []
    for ret in _returns(index, func):
        used = candidates.read(index, ret.value, totals)  # type: ignore[arg-type]
        found = [Derived(name, ret, index.site(ret).stmt, used, why)] if used else []
        found += derived_shown(index, ret, totals, candidates)
        out += [Derived(name, d.node, d.stmt, d.totals, d.why or why) for d in found]
    return out


def derived_reductions(ctx, d: Derived, view) -> tuple[dict[str, str], str | None]:
    """The reductions (metric_reduce) of the totals the shown value `d` is derived from, made just before
    the statement that derives it; or why that cannot be done. `view`: the pass's ShardView."""
    if d.why is not None:
        return {}, d.why
    if view.distributed and (not reduces_on_cpu(ctx) or ctx.facts.ranks.rank_guarded(d.stmt)):
        return {}, f"{d.name} is not derived where every rank can reduce its totals"
    ops = reducer_of(ctx).reductions(d.node, set(d.totals), view.loader_names, d.stmt, view.bounds)
    if ops is not None and type(d.node) is cst.Return:
        facts = ctx.facts
        func = facts.index.scope_of(d.node)
        callers = facts.index.callers_of(func)
        if not all(reached_alike(facts, facts.index.site(c).stmt) for c in callers):
            return {}, f"not every rank calls {func.name.value}, which returns {d.name}, alike"
    if ops is None:
        return {}, f"not every rank reaches the statement that derives {d.name} alike"
    return ops, None


__all__ = ["Derived", "Sources", "derivations_of", "derived_reductions", "derived_shown"]
