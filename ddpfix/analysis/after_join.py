"""Is a statement reached only after the process group is joined (so that it can wait at a barrier)?
The joins the script makes (also through its own modules), or the one DDP001 puts at the top of the
entry point; the statement is reached after one in its own scope, or through every caller of the
function holding it (by name, by `self.`, or through an instance), a few calls deep."""

from __future__ import annotations

import libcst as cst

from .own_instances import method_callers
from .summaries import INIT
from .training import HELPER_DEPTH


def why_not_after_join(facts, stmt: cst.BaseStatement) -> str | None:
    """None when every rank reaches `stmt` after joining the process group (one the script joins, or
    the one DDP001 sets up at the top of the entry point); else why not."""
    launch = facts.launch
    joins = list(launch.init_calls) + [c for c in facts.index.calls if facts.modules.call_does(c, INIT)]
    if not joins and launch.joins_elsewhere is None:
        return "where the script joins its process group cannot be told: put a barrier around it by hand"
    if joins:
        points = _join_points(facts, joins)
        return None if _reached_after(facts, stmt, points, 0) else BEFORE_INIT
    entry = launch.entry
    if isinstance(entry, cst.Module):
        points = [facts.module]
    else:
        points = [entry]
    return None if _reached_after(facts, stmt, points, 0) else BEFORE_INIT


BEFORE_INIT = "it runs before the process group is joined, so it cannot wait at a barrier: move it after"


def _join_points(facts, joins: list[cst.Call]) -> list[cst.CSTNode]:
    """The calls after which the process group exists: the joins, and calls of this file's functions
    that make them."""
    index = facts.index
    points: list[cst.CSTNode] = list(joins)
    frontier = list(joins)
    for _ in range(HELPER_DEPTH):
        funcs = {index.scope_of(c) for c in frontier}
        frontier = [c for f in funcs if isinstance(f, cst.FunctionDef) for c in index.callers_of(f)]
        points += frontier
    return points


def _reached_after(facts, stmt: cst.CSTNode, points: list[cst.CSTNode], depth: int) -> bool:
    index = facts.index
    scope = index.scope_of(stmt)
    for point in points:
        if point is scope and not isinstance(point, cst.Module):
            return True  # the entry function: DDP001 joins at its top
        if isinstance(point, cst.If) and index.contains(point, stmt):
            return True  # the __main__ block
        if point is facts.module and scope is facts.module:
            return True  # a module-level script: DDP001 joins after the imports
        if isinstance(point, cst.Call) and index.scope_of(point) is scope and index.before(point, stmt):
            return True
    if isinstance(scope, cst.FunctionDef) and depth < HELPER_DEPTH:
        # called by name, by `self.` in its class, or through an instance (`solver = Solver(args)`, then
        # `solver.run()` after the join)
        callers = index.callers_of(scope) + method_callers(index, facts.names, scope)
        return bool(callers) and all(_reached_after(facts, index.site(c).stmt, points, depth + 1) for c in callers)
    return False


__all__ = ["BEFORE_INIT", "why_not_after_join"]
