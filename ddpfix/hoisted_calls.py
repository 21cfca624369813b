"""A call that issues a collective, in what a rank-0 guard is about to hide (a print, a tracker's log,
a log record: `print(f"accuracy
{evaluate(model, val_loader) / n:.3f}")`, where `evaluate()` all-reduces its count): taken out into a
statement of its own before the guarded one, which every rank runs (`evaluate_result =
evaluate(model, val_loader)`), so that every rank joins the collective and rank 0 alone shows the value.
So is a call of the script's own that trains (`print(f"loss {run_epoch(model, loader, opt):.4f}")`):
once the model is DDP-wrapped its backward all-reduces, and rank 0 alone training would wait forever."""

from __future__ import annotations

import libcst as cst

from .analysis.summaries import TRAINS
from .order import Order
from .rule import Context
from .syntax import calls_in, code_of, dotted, method_name

# where a call's value may depend on names the statement binds itself: not taken out of these
SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


def to_hoist(facts, node: cst.CSTNode) -> list[cst.Call] | None:
    """The outermost calls issuing a collective in `node` (empty: none), or None when one cannot be taken
    out of its statement (inside a lambda or a comprehension, or a statement that is more than the
    expression `node`): the statement must then stay on every rank."""
    ranks, index = facts.ranks, facts.index
    found = [c for c in calls_in(node) if c is not node and (ranks.collective_op(c) is not None or trains(facts, c))]
    outer = [c for c in found if not any(o is not c and index.contains(o, c) for o in found)]
    if not outer:
        return []
    stmt = index.site(node).stmt
    if not (type(stmt) is cst.SimpleStatementLine and len(stmt.body) == 1 and type(stmt.body[0]) is cst.Expr):
        return None
    if any(isinstance(a, SCOPES) for c in outer for a in index.ancestors(c) if index.contains(node, a)):
        return None
    return outer


def trains(facts, call: cst.Call) -> bool:
    """Does `call`, a function of this file or of the script's own modules, run a training step?"""
    callee = facts.index.callee_of(call)
    if callee is not None:
        return facts.training.trains_in(callee)
    return bool(facts.modules.call_does(call, TRAINS))


def hoist(ctx: Context, node: cst.CSTNode, calls: list[cst.Call]) -> None:
    """Plan `calls` (from `to_hoist`) out of the statement holding `node`, each into a name of its own
    bound just before it."""
    if not calls:
        return
    plan = ctx.plan
    lines = []
    for call in calls:
        base = method_name(call) or (dotted(call.func) or "value").split(".")[-1]
        name = plan.fresh(f"{base}_result")
        lines.append(f"{name} = {code_of(call)}")
        plan.replace(call, lambda n, v=name: cst.Name(v))
        plan.hoisted.append(call)
    plan.insert_before(ctx.facts.index.site(node).stmt, plan.statements("\n".join(lines)), Order.HOISTED_COLLECTIVE)


__all__ = ["hoist", "to_hoist", "trains"]
