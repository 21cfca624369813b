"""Names a new rank guard leaves unbound on the other ranks, checked on the plan.

`if RANK == 0:` around `writer = SummaryWriter()` binds `writer` on rank 0 only; a later statement of
the same scope that reads `writer` outside such a guard raises NameError on every other rank under
torchrun (a plain `python train.py` is rank 0 and never shows it). pyflakes counts a binding in a
branch as a binding, so this is checked here: a name bound only by newly guarded statements before a
reader that no rank condition covers.
"""

from __future__ import annotations

from ..analysis import ScriptFacts
from ..plan import Plan
from .dataflow import deep_names
from .moves import MoveCheck, Problem, short


def check(plan: Plan, facts: ScriptFacts, moves: MoveCheck) -> list[Problem]:
    if not plan.guards:
        return []
    out: list[Problem] = []
    for stmt, cond in plan.guards.items():
        binds = {n for n in deep_names(stmt).binds if "." not in n}  # attributes: read in other scopes too
        if not binds:
            continue
        scope = moves.scope_of(stmt)
        if scope is None:
            continue
        order = moves.scope_order(scope)
        i = order.index.get(id(stmt))
        if i is None:
            continue
        guarded = _guarded_ranges(plan, order, cond)
        for j in range(order.end[i], len(order.units)):
            if any(a <= j < b for a, b in guarded):
                continue
            hit = sorted(binds & order.header(j).reads)
            if not hit or facts.ranks.rank_guarded(order.units[j]):
                continue
            name = hit[0]
            if any(k < j and not any(a <= k < b for a, b in guarded) for k in order.binding(name)):
                continue  # bound on every rank before the reader, too
            out.append(
                Problem(
                    plan.guard_rules.get(stmt),
                    f"binds `{name}` under `if {cond}:` only, but `{short(order.units[j])}` reads it on every rank",
                )
            )
            break
    return out


def _guarded_ranges(plan: Plan, order, cond: str) -> list[tuple[int, int]]:
    """The statements (with their blocks) the plan puts under the same condition."""
    out = []
    for node, c in plan.guards.items():
        k = order.index.get(id(node))
        if k is not None and c == cond:
            out.append((k, order.end[k]))
    return out


__all__ = ["check"]
