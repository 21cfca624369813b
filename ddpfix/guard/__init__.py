"""The output guard: no fix is handed back that makes the script worse than it was.

Every rewrite (`apply`, `diff`, the API, the language server's code actions) is checked against its
input before anyone sees it:

1. the plan: a rule that offers no fix proposes no edit, no moved or inserted statement breaks a
   data dependency (moves.py), and no name bound under a new rank guard is read on the other ranks
   (rank_guards.py), both checked on the plan before it is applied (plan_checks.py);
2. the output parses, and running the rules over it again plans no edit; when it does, that pass's
   output is checked the same way, up to `MAX_PASSES` passes in all (fixpoint.py);
3. no name is undefined or read before assignment that was not already (names.py);
4. no init point of the process group runs after another one, and every `DistributedDataParallel`
   and every collective (`dist.broadcast(...)`) is preceded by one, where the input did not already
   do otherwise (process_group.py).

Where the fix also edits the script's own modules (module_edits.py), steps 2 to 4 and the contract
read those modules as the fix leaves them (`stamps.overlaid`); each edited module has been checked
on its own already (it parses, no new undefined name).

When a check fails, the rules behind it are found (blame.py) and their fixes withheld, with every fix
that needs them; the others are planned again without them, over the same analysis, and checked
again. Each withheld fix is reported on its findings: `Diagnostic.withheld` says why.
"""

from __future__ import annotations

import ast
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import libcst as cst

from ..analysis import ScriptFacts
from ..analysis.stamps import overlaid
from ..contract.lines import to_input
from ..diagnostic import NONE, SAFE, Diagnostic, FileChange
from ..passes import dependents, plan_pass
from ..render import render
from ..rule import Context
from ..suppress import might_have, scan
from ..transforms import BY_CODE
from . import moves, names, plan_checks, process_group
from .fixpoint import MAX_PASSES, Fixpoint, fixpoint

NO_EDIT = "its fix plans no edit here"


@dataclass
class Verdict:
    reason: str | None = None  # None: every check passed
    rules: set[str] = dataclasses.field(default_factory=set)  # the rules the failing check could name
    module: cst.Module | None = None  # the checked output (after the passes the fixpoint took)
    text: str = ""
    facts: ScriptFacts | None = None  # the fixpoint's analysis of `module` (None: no rule looks at it)
    findings: list[Diagnostic] | None = None  # what `check` reports on `module`, when the fixpoint knows
    later: list[tuple[Diagnostic, str]] = dataclasses.field(default_factory=list)  # fixes of later passes

    @property
    def ok(self) -> bool:
        return self.reason is None


@dataclass
class Outcome:
    ctx: Context  # the pass whose edits are kept (its diagnostics are the findings)
    module: cst.Module
    text: str
    withheld: dict[str, str]  # rule code -> why its fix was left out
    kept_nothing: bool = False  # no set of fixes passed the checks: the output is the input
    facts: ScriptFacts | None = None  # the analysis of `module` when it is not the input
    after: list[Diagnostic] | None = None  # `check`'s findings on `module` (None: not known yet)
    others: dict[str, FileChange] = dataclasses.field(default_factory=dict)  # the script's modules it edits
    texts: dict[Path, bytes] = dataclasses.field(default_factory=dict)  # ... their new bytes, by path
    later: list[Diagnostic] = dataclasses.field(default_factory=list)  # fixes of later passes, at input lines

    def diagnostics(self) -> list[Diagnostic]:
        unsafe = self.ctx.unsafe_fixes
        out = []
        for d in self.ctx.diagnostics:
            reason = self.withheld.get(d.code)
            rule = BY_CODE.get(d.code)
            offered = d.fix != NONE and (d.fix == SAFE or unsafe)
            if reason is not None and (offered or (rule is not None and rule.fix == NONE)):  # (an edit unasked)
                d = dataclasses.replace(d, applied=False, withheld=reason)
            elif d.applied and self.kept_nothing:
                d = dataclasses.replace(d, applied=False)
            out.append(d)
        seen = {(d.code, d.line) for d in out}
        return out + [d for d in self.later if (d.code, d.line) not in seen]


class Guard:
    """One input, the rules' settings, and the checks of any set of fixing rules against it."""

    def __init__(
        self,
        facts: ScriptFacts,
        text: str,
        tree: ast.Module | None,
        active: list[str],
        fixing: set[str],
        unsafe_fixes: bool,
        suppressions=None,
        judges: list[str] | None = None,
    ) -> None:
        self.facts, self.text, self.tree = facts, text, tree
        self.active, self.fixing, self.unsafe_fixes = active, fixing, unsafe_fixes
        self.judges = active if judges is None else judges  # the rules `check` runs over an output
        self.suppressions = suppressions
        self._names: names.Findings | None = None
        self._counts: process_group.Counts | None = None
        self._parses: bool | None = None

    # ------------------------------------------------------------------ the loop
    def run(self) -> Outcome:
        ctx = self.plan(self.fixing)
        if _nothing_to_do(ctx):  # a fix reported as made that edits nothing is not made: say so
            idle = {d.code: NO_EDIT for d in ctx.diagnostics if d.applied}
            return Outcome(ctx, self.facts.module, self.text, idle)
        verdict = self.verify(ctx)
        if verdict.ok:
            return self._outcome(ctx, verdict, {})
        from .blame import blame  # only the failing path pays for it

        ctx, verdict, withheld = blame(self, ctx, verdict)
        if not verdict.ok:  # no set of fixes passes: the input stays as it is
            for d in ctx.diagnostics:
                if d.applied:
                    withheld.setdefault(d.code, verdict.reason or "")
            verdict = Verdict(module=None)
        return self._outcome(ctx, verdict, withheld)

    def _outcome(self, ctx: Context, verdict: Verdict, withheld: dict[str, str]) -> Outcome:
        full = dict(withheld)
        for code, reason in withheld.items():
            for dep in sorted(dependents([code]) - {code}):
                full.setdefault(dep, f"needs {code}'s fix, which was withheld: {reason}")
        if verdict.module is None:  # nothing left to apply
            return Outcome(ctx, self.facts.module, self.text, full, kept_nothing=not ctx.plan.is_empty())
        others, texts = (ctx.others.changes(), ctx.others.texts()) if ctx.others is not None else ({}, {})
        return Outcome(
            ctx,
            verdict.module,
            verdict.text,
            full,
            facts=verdict.facts,
            after=verdict.findings,
            others=others,
            texts=texts,
            later=self._at_input(verdict.later),
        )

    def _at_input(self, later: list[tuple[Diagnostic, str]]) -> list[Diagnostic]:
        """Fixes a later pass made, placed at the line of the input a user would look at (the code they
        edit was inserted before it, or is its own line re-indented), at its first non-blank column."""
        out, lines = [], self.text.splitlines()
        maps: dict[str, object] = {}
        for d, text in later:
            mapped = maps.setdefault(text, to_input(self.text, text))
            line = mapped(d.line)  # type: ignore[operator]
            source = lines[line - 1] if 0 < line <= len(lines) else ""
            col = len(source) - len(source.lstrip()) + 1
            out.append(dataclasses.replace(d, line=line, col=col, end_line=line, end_col=col))
        return out

    def plan(self, fixing: set[str]) -> Context:
        return plan_pass(self.facts, self.active, fixing, self.unsafe_fixes, self.suppressions)

    # ------------------------------------------------------------------ the checks
    def verify(self, ctx: Context) -> Verdict:
        """Check the output of `ctx`'s plan (cheapest checks first)."""
        plan = ctx.plan
        if _nothing_to_do(ctx):
            return Verdict(module=None)
        silent = sorted(r for r in plan.edited if r in BY_CODE and BY_CODE[r].fix == NONE)
        if silent:
            return Verdict(f"{silent[0]} edits the script but offers no fix", set(silent))
        problems = plan_checks.check(plan, self.facts)
        if problems:
            named = {p.rule for p in problems}
            return Verdict(problems[0].reason, set() if None in named else named)  # type: ignore[arg-type]
        module = plan.apply()
        # the later passes and checks read the script's own modules as this plan edits them
        with overlaid(ctx.others.texts() if ctx.others is not None else {}):
            text = render(module, self.facts.module, self.text, self.tree if self.input_parses() else None)
            result = fixpoint(self, module, text, ctx.fixing)
            if isinstance(result, str):
                return Verdict(result)
            return self._after(result)

    def _after(self, out: Fixpoint) -> Verdict:
        """The checks that compare the final output with the input."""
        if out.tree is not None and self.input_parses():
            found = names.findings(out.tree)
            added = names.new_findings(self.input_names(), found) if found else []
            if added:
                return Verdict(names.describe(added))
        if out.facts is not None:
            after = process_group.counts(out.facts)
            if after.repeated or after.unjoined:
                before = self.input_counts()
                if len(after.repeated) > len(before.repeated):
                    return Verdict(self._repeated_reason(after))
                if len(after.unjoined) > len(before.unjoined):
                    wrap = after.unjoined[-1]
                    return Verdict(f"`{moves.short(wrap)}` would run before the process group is initialised")
        return Verdict(module=out.module, text=out.text, facts=out.facts, findings=out.findings, later=out.later)

    def _repeated_reason(self, after: process_group.Counts) -> str:
        first = process_group.first_point(self.facts)
        if first is None:
            return "the process group would be initialised twice"
        line = self.facts.index.position(first.call).start.line
        joins = "already joins" if first.certain else "may already join"
        return f"the script {joins} the process group ({first.text} at line {line}); it would be initialised twice"

    # ------------------------------------------------------------------ the output, as `check` sees it
    def output_findings(self, outcome: Outcome) -> list[Diagnostic]:
        """What `ddpfix check` with the rules `judges` reports on `outcome`'s output: what the fixpoint's
        settling pass found (it ran those rules), the first pass's findings when the output is the input
        and that pass ran the same rules, else one more pass (no rule fixing) over the analysis."""
        changed = outcome.module is not self.facts.module or bool(outcome.texts)  # the script or its modules
        if outcome.after is not None and changed:
            return outcome.after
        if not changed:
            if set(self.judges) == set(self.active):
                return [dataclasses.replace(d, applied=False, withheld=None) for d in outcome.ctx.diagnostics]
            facts, suppressions = self.facts, self.suppressions
        else:
            facts = outcome.facts
            if facts is None:
                return []
            suppressions = scan(outcome.text) if might_have(outcome.text) else None
        with overlaid(outcome.texts):
            return plan_pass(facts, self.judges, set(), self.unsafe_fixes, suppressions).diagnostics

    # ------------------------------------------------------------------ the input's side, once
    def input_parses(self) -> bool:
        if self._parses is None:
            if self.tree is None:
                try:
                    self.tree = ast.parse(self.text)
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    self.tree = None
            self._parses = self.tree is not None
        return self._parses

    def input_names(self) -> names.Findings:
        if self._names is None:
            assert self.tree is not None
            self._names = names.findings(self.tree)
        return self._names

    def input_counts(self) -> process_group.Counts:
        if self._counts is None:
            self._counts = process_group.counts(self.facts)
        return self._counts


def guarded_fix(
    facts: ScriptFacts,
    text: str,
    tree: ast.Module | None,
    active: list[str],
    fixing: set[str],
    unsafe_fixes: bool,
    suppressions=None,
    judges: list[str] | None = None,
) -> Outcome:
    """Plan every fix, check the output, and leave out the fixes that would break the script; the
    outcome holds what `check` with the rules `judges` (default: `active`) reports on its output
    (`Outcome.after`), for the contract."""
    guard = Guard(facts, text, tree, active, fixing, unsafe_fixes, suppressions, judges)
    outcome = guard.run()
    outcome.after = guard.output_findings(outcome)
    return outcome


def _nothing_to_do(ctx: Context) -> bool:
    """No edit of the script and none of its modules (a fix may edit only a module: `trainer.save()`)."""
    return ctx.plan.is_empty() and (ctx.others is None or not ctx.others.changes())


__all__ = ["guarded_fix", "Guard", "Outcome", "Verdict", "MAX_PASSES"]
