"""The output parses, and the rules plan nothing more on it (or reach that within `MAX_PASSES`).

A pass over an output runs what a second `ddpfix apply` would run, on the tree the plan built rather
than on a new parse of its text, with every rule the contract judges by (`Guard.judges`; those not
fixing only report). The pass that settles is therefore also what `ddpfix check` says of the output:
its findings are kept for the contract (`Fixpoint.findings`), so the output is analysed once. Positions
are computed only for what is reported.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from ..analysis import ScriptFacts
from ..diagnostic import Diagnostic
from ..passes import MIGHT_TRAIN, plan_pass, reaches_rules
from ..render import render
from ..suppress import might_have, scan
from . import plan_checks

if TYPE_CHECKING:
    from . import Guard

MAX_PASSES = 3  # the first pass and at most two more over its output


@dataclass
class Fixpoint:
    module: cst.Module
    text: str
    tree: ast.Module | None  # Python's parse of `text` (None when the input has none either)
    facts: ScriptFacts | None  # the analysis of `module` (None: not a script the rules look at)
    findings: list[Diagnostic] | None = None  # what `check` reports on `module` (None: not computed)
    # fixes a later pass made (DDP409 reducing a total the first pass's rank guard now shows), each with
    # the text its position is in
    later: list[tuple[Diagnostic, str]] = dataclasses.field(default_factory=list)


def fixpoint(guard: Guard, module: cst.Module, text: str, fixing: set[str]) -> Fixpoint | str:
    """Check that `module` (rendered as `text`) parses and that more passes of the same fixes settle
    on an output; that output, or why there is none."""
    later: list[tuple[Diagnostic, str]] = []
    for n in range(2, MAX_PASSES + 1):
        tree, problem = _parse(guard, module, text)
        if problem is not None:
            return problem
        facts, ctx = _pass(guard, module, text, tree, fixing)
        if ctx is None or ctx.plan.is_empty():
            return Fixpoint(module, text, tree, facts, _as_checked(ctx), later)
        if n == MAX_PASSES:
            edited = ", ".join(sorted(ctx.plan.edited)) or "the shared setup"
            return f"the output is still not settled after {MAX_PASSES} passes ({edited} would change it again)"
        problems = plan_checks.check(ctx.plan, facts)  # type: ignore[arg-type]
        if problems:
            return problems[0].reason
        again = ctx.plan.apply()
        new_text = render(again, module, text, tree)
        if new_text == text:  # edits that render as they were
            return Fixpoint(module, text, tree, facts, _as_checked(ctx), later)
        later += [(d, text) for d in ctx.diagnostics if d.applied]
        module, text = again, new_text
    raise AssertionError("unreachable")  # pragma: no cover


def _parse(guard: Guard, module: cst.Module, text: str) -> tuple[ast.Module | None, str | None]:
    if guard.input_parses():
        try:
            return ast.parse(text), None
        except SyntaxError as exc:
            return None, f"the output would not parse: {exc.msg} (line {exc.lineno})"
        except (ValueError, RecursionError, MemoryError) as exc:
            return None, f"the output would not parse: {type(exc).__name__}"
    try:  # syntax newer than this Python knows: LibCST's parser decides
        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return None, f"the output would not parse: {exc.message.splitlines()[0]} (line {exc.raw_line})"
    return None, None


def _pass(guard: Guard, module: cst.Module, text: str, tree: ast.Module | None, fixing: set[str]):
    """The analysis of an output and the plan the rules make on it (None: no rule would run)."""
    suppressions = scan(text) if might_have(text) else None
    if not MIGHT_TRAIN.search(text):
        return None, None
    facts = ScriptFacts(module, text, tree, guard.facts.path, cross_file=guard.facts.cross_file)
    if not reaches_rules(facts):
        return facts, None
    return facts, plan_pass(facts, guard.judges, fixing, guard.unsafe_fixes, suppressions)


def _as_checked(ctx) -> list[Diagnostic]:
    """The findings of a pass that changes nothing more, as `check` reports them (no fix applied)."""
    if ctx is None:
        return []
    return [dataclasses.replace(d, applied=False, withheld=None) for d in ctx.diagnostics]


__all__ = ["MAX_PASSES", "Fixpoint", "fixpoint"]
