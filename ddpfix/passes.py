"""One pass of the rules over one analysis: which rules fix, and the plan they make together.

`run_rules` makes one pass for `check` (no rule fixes) and one for a fix; the output guard makes
more over the same analysis, each with a smaller set of fixing rules, to find and leave out a fix
that would break the script (see ddpfix/guard/).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .analysis import ScriptFacts
from .diagnostic import NONE
from .module_edits import ModuleEdits
from .rule import Context
from .transforms import RULES

# A training script, a process group or a DDP wrap (ScriptFacts.is_training_script) cannot
# be written without one of these words.
MIGHT_TRAIN = re.compile(r"parameters|backward|init_process_group|DistributedDataParallel")


def with_requirements(codes: Iterable[str]) -> set[str]:
    """`codes` and every fix they need (DDP201's sampler needs DDP001's process group), transitively."""
    out = set(codes)
    grew = True
    while grew:
        grew = False
        for rule in RULES:
            if rule.code in out and not out.issuperset(rule.requires):
                out.update(rule.requires)
                grew = True
    return out


def dependents(codes: Iterable[str]) -> set[str]:
    """`codes` and every rule whose fix needs one of them, transitively (leaving out a fix leaves
    these out too)."""
    out = set(codes)
    grew = True
    while grew:
        grew = False
        for rule in RULES:
            if rule.code not in out and out.intersection(rule.requires):
                out.add(rule.code)
                grew = True
    return out


def reaches_rules(facts: ScriptFacts) -> bool:
    """A training script, or one with a process group or a DDP wrap: what the rules are about."""
    return facts.is_training_script()


def registry_index() -> dict[str, int]:
    return {rule.code: i for i, rule in enumerate(RULES)}


def plan_pass(
    facts: ScriptFacts,
    active: Iterable[str],
    fixing: set[str],
    unsafe_fixes: bool,
    suppressions=None,
    *,
    edits_only: bool = False,
    unfixed: str | None = None,
) -> Context:
    """Run every active or fixing rule, in registry order, over `facts` into one plan. A rule that
    runs only to provide a fix another one needs reports nothing. With `edits_only` (a pass whose
    findings nobody reads), the rules that offer no fix are skipped: they propose no edit. `unfixed`:
    why no fix is made in this file (its findings then offer none)."""
    active = set(active)
    ctx = Context(facts, fixing, unsafe_fixes)
    ctx.suppressions = suppressions
    ctx.unfixed = unfixed
    if facts.cross_file and facts.path:
        ctx.others = ModuleEdits(facts, unsafe_fixes)
    ran = [r for r in RULES if (r.code in active or r.code in fixing) and not (edits_only and r.fix == NONE)]
    for phase in ("run", "after_plan"):
        for rule in ran:
            ctx.rule = rule
            ctx.plan.rule = rule.code
            before = len(ctx.diagnostics)
            getattr(rule, phase)(ctx)
            if rule.code not in active:
                del ctx.diagnostics[before:]
    ctx.plan.rule = None  # what follows serves every rule: the environment constants, the imports
    ctx.finish()
    return ctx


__all__ = ["MIGHT_TRAIN", "with_requirements", "dependents", "reaches_rules", "registry_index", "plan_pass"]
