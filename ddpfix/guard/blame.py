"""Which fixes to withhold when the output of all of them fails a check.

A check that can name the rule behind a problem (a moved or inserted statement, an edit by a rule
that offers no fix) names it: that fix is withheld, with every fix that needs it, and the rest is
planned and checked again. Otherwise the fixes that made edits are added back one at a time, each
after the fixes it needs (registry order otherwise), to the fixes that made none: a fix whose addition
makes the output fail a check is withheld, with the reason that check gives, and the search goes on
with the next one. A fix that breaks the script on its own is found by the same step as one that
breaks it only together with an earlier fix, and no fix that passes is dropped on the way. The
accepted set is the last one that passed every check.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..passes import dependents, registry_index, with_requirements
from ..rule import Context

if TYPE_CHECKING:
    from . import Guard, Verdict


def blame(guard: Guard, ctx: Context, verdict: Verdict) -> tuple[Context, Verdict, dict[str, str]]:
    """The pass to keep, its verdict (passed), and why each left-out fix was withheld."""
    fixing = set(ctx.fixing)
    withheld: dict[str, str] = {}
    while verdict.rules and verdict.rules & fixing:  # the check named its culprits
        for code in sorted(verdict.rules):
            withheld[code] = verdict.reason or ""
        fixing -= dependents(verdict.rules)
        ctx = guard.plan(fixing)
        verdict = guard.verify(ctx)
        if verdict.ok:
            return ctx, verdict, withheld
    return _search(guard, ctx, verdict, fixing, withheld)


def _search(
    guard: Guard, ctx: Context, verdict: Verdict, fixing: set[str], withheld: dict[str, str]
) -> tuple[Context, Verdict, dict[str, str]]:
    index = registry_index()
    candidates = [c for c in ctx.plan.edited if c in fixing]
    candidates.sort(key=lambda c: (max(index.get(r, -1) for r in with_requirements([c])), index.get(c, -1)))
    base = _consistent(fixing - set(candidates))
    accepted: set[str] = set()
    last = None
    for code in candidates:
        if code in accepted:
            continue
        needs = with_requirements([code])
        if needs & set(withheld):
            continue  # reported through the fix it needs
        trial = _consistent(base | accepted | needs)
        trial_ctx = guard.plan(trial)
        trial_verdict = guard.verify(trial_ctx)
        if trial_verdict.ok:
            accepted |= needs
            last = (trial, trial_ctx, trial_verdict)
        else:
            withheld[code] = trial_verdict.reason or ""
    final = _consistent(base | accepted)
    if last is not None and last[0] == final:
        return last[1], last[2], withheld
    ctx = guard.plan(final)
    verdict = guard.verify(ctx)
    if verdict.ok:
        return ctx, verdict, withheld
    # The fixes that made no edits with the others make some now, and that fails: keep nothing.
    for code in sorted(final & set(ctx.plan.edited)):
        withheld.setdefault(code, verdict.reason or "")
    ctx = guard.plan(set())
    return ctx, guard.verify(ctx), withheld  # may still fail (a rule that edits unasked): the caller keeps the input


def _consistent(codes: set[str]) -> set[str]:
    """`codes` without those whose required fixes are not all in it."""
    out = set(codes)
    while True:
        drop = {c for c in out if not with_requirements([c]) <= out}
        if not drop:
            return out
        out -= drop


__all__ = ["blame"]
