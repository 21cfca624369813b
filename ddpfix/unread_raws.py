"""The name a DDP wrap keeps the plain module under (`raw_model = model`, just before `model =
DDP(model, ...)`: DDP301), left out of the output where no edit reads it.

The name serves the edits that need the plain module after the wrap (a save of its state_dict, a
method only the model has, `return raw_model`). Where none does, `raw_model = model` would be a line
the reader has to puzzle over, and one a linter flags. A name the plan introduced can only be read by
what the plan adds (the script cannot know it): the statements it inserts and the expressions it
replaces. So the decision needs no walk of the whole output: those are counted, and a name that
appears there once, as its own assignment, is unread.
"""

from __future__ import annotations

from collections import Counter

import libcst as cst

from .syntax import walk


def drop_unread(plan, replaced: list[cst.CSTNode]) -> bool:
    """Remove from `plan`'s inserts the assignment of each plain-module name it introduced that no other
    inserted statement nor replacement (`replaced`: what the replacements made) reads; whether any was."""
    names = {raw for raw in plan.raw_names.values() if "." not in raw and raw in plan.introduced}
    if not names:
        return False
    inserts = [ins for table in (plan.before, plan.after, plan.prepends) for group in table.values() for ins in group]
    seen: Counter[str] = Counter()
    for node in [s for ins in inserts for s in ins.stmts] + replaced:
        for n in walk(node):
            if type(n) is cst.Name and n.value in names:
                seen[n.value] += 1
    unread = {name for name in names if seen[name] == 1}
    dropped = False
    for ins in inserts:
        kept = [s for s in ins.stmts if _kept_name(s) not in unread]
        if len(kept) != len(ins.stmts):
            ins.stmts[:] = kept
            dropped = True
    return dropped


def _kept_name(stmt: cst.BaseStatement) -> str | None:
    """`raw_model` of the statement `raw_model = model` (one name bound to another); else None."""
    if type(stmt) is not cst.SimpleStatementLine or len(stmt.body) != 1:
        return None
    small = stmt.body[0]
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.value) is not cst.Name:
        return None
    target = small.targets[0].target
    return target.value if type(target) is cst.Name else None


__all__ = ["drop_unread"]
