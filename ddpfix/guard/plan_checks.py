"""The checks made on the plan itself, before it is applied: the data dependencies of moved and inserted
statements (moves.py), then the names bound under new rank guards (rank_guards.py)."""

from __future__ import annotations

from ..analysis import ScriptFacts
from ..plan import Plan
from . import rank_guards
from .moves import MoveCheck, Problem


def check(plan: Plan, facts: ScriptFacts) -> list[Problem]:
    """Moved and inserted statements' dependencies, then names bound under new rank guards."""
    moves = MoveCheck(plan, facts)
    return moves.problems() or rank_guards.check(plan, facts, moves)


__all__ = ["check"]
