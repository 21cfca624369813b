"""What a rule is, and the context it runs in (facts to read, a plan to edit, a place to report)."""

from __future__ import annotations

from typing import ClassVar

import libcst as cst

from .analysis import ScriptFacts
from .diagnostic import NONE, SAFE, UNSAFE, Diagnostic
from .plan import Order, Plan
from .syntax import assign_targets

ENV_DEFAULTS = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
ENV_FALLBACK_NAMES = {
    "RANK": "GLOBAL_RANK",
    "LOCAL_RANK": "NODE_LOCAL_RANK",
    "WORLD_SIZE": "NUM_PROCESSES",
    "DISTRIBUTED": "IS_DISTRIBUTED",
}


class Rule:
    """One rule: a stable code, a one-line message, docs, a fix level and `run()`.

    `docs` is Markdown with the sections What / Why / Example / Fix safety; `ddpfix rules` and
    docs/rules.md are generated from it, so the text cannot drift from the code.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix: ClassVar[str] = SAFE
    requires: ClassVar[tuple[str, ...]] = ()  # rules whose fixes this rule's fix needs (DDP201 needs DDP001)
    provides: ClassVar[frozenset[str]] = frozenset()  # plan state this rule fills: "wraps", "samplers", "hoisted"
    reads: ClassVar[frozenset[str]] = frozenset()  # plan state this rule reads: its providers run first
    docs: ClassVar[str] = ""

    def run(self, ctx: "Context") -> None:  # pragma: no cover - every rule overrides
        raise NotImplementedError


class Context:
    """Handed to each rule: `facts` to read, `plan` to edit, `report()` to record a finding."""

    def __init__(self, facts: ScriptFacts, fixing: set[str], unsafe_fixes: bool) -> None:
        self.facts = facts
        self.plan = Plan(facts)
        self.fixing = fixing
        self.unsafe_fixes = unsafe_fixes
        self.diagnostics: list[Diagnostic] = []
        self.rule: Rule | None = None
        self.suppressions = None  # suppress.Suppressions: `# ddpfix: ignore[...]` comments of this source
        self._env: dict[str, str] = {}
        self._env_missing: list[str] = []

    # ------------------------------------------------------------------ reporting
    def report(self, node: cst.CSTNode, message: str | None = None, *, fix: str | None = None) -> bool:
        """Record a finding at `node`; return True when the rule should also make its edits."""
        rule = self.rule
        assert rule is not None
        level = rule.fix if fix is None else fix
        pos = self.facts.index.position(node)
        if self.suppressions is not None and self.suppressions.silences(rule.code, pos.start.line):
            return False  # silenced: no finding, and no edits
        applied = level != NONE and rule.code in self.fixing and (level == SAFE or self.unsafe_fixes)
        self.diagnostics.append(
            Diagnostic(
                code=rule.code,
                message=message or rule.message,
                line=pos.start.line,
                col=pos.start.column + 1,
                end_line=pos.end.line,
                end_col=pos.end.column + 1,
                fix=level,
                applied=applied,
            )
        )
        return applied

    # ------------------------------------------------------------------ shared resources
    def env(self, key: str) -> str:
        """Spelling of RANK / LOCAL_RANK / WORLD_SIZE / DISTRIBUTED; added at module level once if missing."""
        if key in self._env:
            return self._env[key]
        env_names = self.facts.launch.env_names
        existing = env_names.get(key)
        if existing is not None:
            self._env[key] = existing
            return existing
        if not self._env_missing:
            for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "DISTRIBUTED"):
                if k not in env_names:
                    self._env_missing.append(k)
            for k in self._env_missing:
                taken = self.facts.index.identifiers | self.plan.introduced
                self._env[k] = k if k not in taken else self.plan.fresh(ENV_FALLBACK_NAMES[k])
                self.plan.introduced.add(self._env[k])
            for k, v in env_names.items():
                self._env.setdefault(k, v)
        return self._env[key]

    def rank0(self, at: cst.CSTNode | None = None) -> str:
        """The rank-0 test: the script's own global-rank variable where `at` sees one, else RANK. A
        variable a plain run sets to -1 (`int(os.environ.get("RANK", -1))`) is tested with
        `in (-1, 0)`, so the plain run keeps its output."""
        name = self.rank_name(at)
        default = self._plain_default(name)
        return f"{name} in ({default}, 0)" if default is not None else f"{name} == 0"

    def not_rank0(self, at: cst.CSTNode | None = None) -> str:
        """The negation of `rank0(at)`: `RANK != 0`."""
        name = self.rank_name(at)
        default = self._plain_default(name)
        return f"{name} not in ({default}, 0)" if default is not None else f"{name} != 0"

    def _plain_default(self, name: str) -> int | None:
        """A plain run's value of the script's own module-level rank variable, when it is not 0."""
        if name not in self.facts.launch.env_names.values():
            return None
        value = self.facts.ranks.plain_value(name)
        return value if value is not None and value != 0 else None

    def rank_name(self, at: cst.CSTNode | None = None) -> str:
        if at is not None:
            var = self.facts.ranks.global_rank_var(at)
            if var is not None:
                return var
        return self.env("RANK")

    def finish(self) -> None:
        """Emit the module-level environment constants if any rule asked for them."""
        if not self._env_missing:
            return
        os_name = self.plan.ref("os", "os", style="import")
        lines = []
        for k in self._env_missing:
            if k == "DISTRIBUTED":
                lines.append(f"{self._env[k]} = {self._env['WORLD_SIZE']} > 1")
            else:
                lines.append(f'{self._env[k]} = int({os_name}.environ.get("{k}", {ENV_DEFAULTS[k]}))')
        stmts = self.plan.statements("\n".join(lines))
        anchor = self.plan.import_anchor()
        body = list(self.facts.module.body)
        script_env = set(self.facts.launch.env_names.values())
        existing = [i for i, st in enumerate(body) if set(assign_targets(st)) & script_env]
        if existing and (anchor is None or existing[-1] > body.index(anchor)):
            anchor = body[existing[-1]]  # after the script's own RANK/WORLD_SIZE, which ours may use
            blanks = 0  # one block with them
        else:
            nxt = _next_statement(self.facts.module, anchor)
            blanks = max(1, sum(1 for l in nxt.leading_lines if l.comment is None)) if nxt is not None else 1
        stmts[0] = stmts[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * blanks)
        if anchor is not None:
            self.plan.insert_after(anchor, stmts, order=Order.ENVIRONMENT)
        else:
            self.plan.prepend(self.facts.module, stmts, order=Order.ENVIRONMENT)


def _next_statement(module: cst.Module, anchor: cst.CSTNode | None) -> cst.BaseStatement | None:
    body = list(module.body)
    if anchor is None:
        return body[0] if body else None
    idx = next((i for i, s in enumerate(body) if s is anchor), None)
    return body[idx + 1] if idx is not None and idx + 1 < len(body) else None


__all__ = ["Context", "NONE", "Order", "Rule", "SAFE", "UNSAFE"]
