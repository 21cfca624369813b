"""Values a script derives from per-rank totals before it shows them: `epoch_loss = running_loss /
len(loader.dataset)`, then `print(epoch_loss)` or `scheduler.step(epoch_loss)`.

Such a value is as per-rank as the totals it reads, so the totals are reduced where the value is
derived (the statement then reads the reduced totals, and every later read of the value, a print, a
return, a scheduler's step, sees the run's number). That is done where the derivation is the last
binding of the name before the statement that shows it, in the same function, in a block that holds
that statement (not inside the loop that accumulates, nor in one branch of an `if`); anywhere else
the value is reported with no fix.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from .analysis.flow import reads
from .metric_reduce import reducer_of
from .sharded_totals import reduces_on_cpu
from .syntax import dotted, walk

_BINDERS = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr, cst.AsName)


@dataclass(frozen=True)
class Derived:
    name: str  # the name shown (`epoch_loss`)
    assign: cst.Assign  # `epoch_loss = running_loss / len(loader.dataset)`
    stmt: cst.CSTNode  # its statement
    totals: frozenset[str]  # the per-rank totals it reads
    why: str | None  # why the totals cannot be reduced there (None: they can)


def derivations_of(index, totals: set[str]) -> dict[str, list[cst.Assign]]:
    """The assignments of one name (`x = ...`) whose value reads any of `totals`, by the name they bind."""
    out: dict[str, list[cst.Assign]] = {}
    for assign in index.assigns:
        if len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
            continue
        if {r.split(".")[0] for r in reads(assign.value)} & totals:
            out.setdefault(assign.targets[0].target.value, []).append(assign)
    return out


def derived_shown(index, node: cst.CSTNode, totals: set[str], candidates: dict[str, list[cst.Assign]]) -> list[Derived]:
    """The values `node` (a print, a scheduler's step) reads that were derived from `totals` (see the
    module's docstring); `candidates`: `derivations_of(index, totals)`."""
    stmt = index.site(node).stmt
    scope = index.scope_of(node)
    out, seen = [], set()
    for n in walk(node):
        if type(n) is not cst.Name or n.value in seen or n.value not in candidates or n.value in totals:
            continue
        parent = index.parent.get(n)
        if (type(parent) is cst.Attribute and parent.attr is n) or (type(parent) is cst.Arg and parent.keyword is n):
            continue
        seen.add(n.value)
        last = _last_binding(index, scope, n.value, stmt)
        if last is None or last not in candidates[n.value]:
            continue  # bound last by something else (`epoch_loss /= n`, a loop target), or not in this function
        at = index.site(last).stmt
        used = frozenset({r.split(".")[0] for r in reads(last.value)} & totals)
        block = index.parent.get(at)
        why = (
            None
            if any(a is block for a in index.ancestors(stmt))
            else f"{n.value} is computed from {', '.join(sorted(used))} in a block that does not hold the statement "
            "that shows it"
        )
        out.append(Derived(n.value, last, at, used, why))
    return out


def derived_reductions(ctx, d: Derived, view) -> tuple[dict[str, str], str | None]:
    """The reductions (metric_reduce) of the totals the shown value `d` is derived from, made just before
    the statement that derives it; or why that cannot be done. `view`: the pass's ShardView."""
    if d.why is not None:
        return {}, d.why
    if view.distributed and (not reduces_on_cpu(ctx) or ctx.facts.ranks.rank_guarded(d.stmt)):
        return {}, f"{d.name} is not derived where every rank can reduce its totals"
    ops = reducer_of(ctx).reductions(d.assign, set(d.totals), view.loader_names, d.stmt, view.bounds)
    if ops is None:
        return {}, f"not every rank reaches the statement that derives {d.name} alike"
    return ops, None


def _last_binding(index, scope: cst.CSTNode, name: str, stmt: cst.CSTNode) -> cst.CSTNode | None:
    """The node of `scope` (not of a function inside it) that binds `name` last before `stmt`."""
    last, last_order = None, -1
    for node in walk(scope):
        if not isinstance(node, _BINDERS) or not index.before(node, stmt):
            continue
        if name not in _own_targets(node) or index.scope_of(node) is not scope:
            continue
        order = index.order(node)
        if order > last_order:
            last, last_order = node, order
    return last


def _own_targets(node: cst.CSTNode) -> set[str]:
    """The names a binding node binds itself (not those of the statements inside a `for`)."""
    if type(node) is cst.Assign:
        targets = [t.target for t in node.targets]
    elif type(node) is cst.AsName:
        targets = [node.name]
    else:
        targets = [node.target]  # type: ignore[attr-defined]
    return {dotted(n) or "" for t in targets for n in walk(t) if type(n) is cst.Name}


__all__ = ["Derived", "derivations_of", "derived_reductions", "derived_shown"]
